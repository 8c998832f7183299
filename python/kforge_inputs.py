#!/usr/bin/env python3
"""kforge's input generator in Python: the same values as GenerateTensor (src/eval/inputs.cc).

The Python worker's child draws the fresh inputs of every timed run of a kforge problem (a
problem.toml with a C++ reference) with this module, from a seed the supervisor draws; the
orchestrator regenerates a sampled run's inputs with GenerateTensor and computes its reference
with the problem's C++ reference. So both must draw the same values. The formula (inputs.h):

    mix(z)   = splitmix64's finalizer (uint64, wrapping)
    state    = mix(key_hash ^ mix(seed))          key_hash: sent by the orchestrator (KeyHash)
    draw i   = mix(state + (i + 1) * 0x9e3779b97f4a7c15)
    u        = (draw >> 11) * 2**-53
    normal   = sqrt(-2 ln max(u1, 1e-300)) * cos(2 pi u2)   (draws 2k and 2k + 1 for element k)

numpy's uint64 arithmetic wraps like C++'s, so the draws are bit-exact; numpy's log and cos may
differ from glibc's in the last ulp of a float64, which no comparison can see after the cast
to the input's dtype (and every comparison has a tolerance anyway).

`python3 kforge_inputs.py dump <cases.json> <folder>` writes each case's bytes to
<folder>/<index>.bin (the cross-check test, src/eval/inputs_test.cc).
"""
import json
import os
import sys

GOLDEN = 0x9e3779b97f4a7c15
M1, M2 = 0xbf58476d1ce4e5b9, 0x94d049bb133111eb
MASK = (1 << 64) - 1
CHUNK = 1 << 20  # elements generated at a time (bounds the temporaries to tens of MB)


def mix_int(z):
    """splitmix64's finalizer on a Python int (exact, modulo 2**64)."""
    z &= MASK
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def mix(np, z):
    """splitmix64's finalizer on a uint64 array (numpy's array arithmetic wraps silently)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(M2)
    return z ^ (z >> np.uint64(31))


def uniforms(np, state, first, count):
    """u for draws first .. first + count - 1 of the stream that starts at `state`."""
    i = np.arange(first + 1, first + count + 1, dtype=np.uint64)
    z = mix(np, np.uint64(state) + i * np.uint64(GOLDEN))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def draw(np, gen, state, start, count, magnitude):
    """Elements start .. start + count - 1 as float64, before the cast (GenerateTensor's Draw)."""
    kind, a, b = gen["kind"], float(gen["a"]), float(gen["b"])
    if kind == "normal":
        u = uniforms(np, state, 2 * start, 2 * count)
        u1, u2 = np.maximum(u[0::2], 1e-300), u[1::2]
        x = a + b * (np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2))
        if gen.get("positive", False):
            x = np.abs(x)
        return x * magnitude
    u = uniforms(np, state, start, count)
    if kind == "uniform":
        return (a + (b - a) * u) * magnitude
    if kind == "integers":
        return a + np.floor(u * (b - a + 1))  # integers are not scaled
    raise ValueError("unknown distribution kind %r (normal, uniform, integers)" % kind)


def values(gen, n, seed, magnitude):
    """All n elements of one input as a float64 numpy array."""
    import numpy as np
    state = mix_int(int(gen["key_hash"]) ^ mix_int(int(seed)))
    out = np.empty(n, dtype=np.float64)
    for s in range(0, n, CHUNK):
        out[s:s + CHUNK] = draw(np, gen, state, s, min(CHUNK, n - s), float(magnitude))
    return out


def cast(np, x, dtype):
    """float64 -> dtype, round to nearest, as FromDouble does (16-bit floats through float32).
    Returns a numpy array of the dtype, or for bfloat16 (which numpy lacks) its bit patterns as
    uint16."""
    if dtype == "float64":
        return x
    if dtype in ("float32", "float16", "bfloat16"):
        f = x.astype(np.float32)
        if dtype == "float16":
            return f.astype(np.float16)
        if dtype == "bfloat16":  # round to nearest even on the upper 16 bits (no NaNs are drawn)
            bits = f.view(np.uint32)
            bits = bits + np.uint32(0x7fff) + ((bits >> np.uint32(16)) & np.uint32(1))
            return (bits >> np.uint32(16)).astype(np.uint16)
        return f
    if dtype in ("int32", "int64"):
        return x.astype(np.int32 if dtype == "int32" else np.int64)
    raise ValueError("unsupported dtype %r" % dtype)


def host_bytes(gen, dtype, dims, seed, magnitude):
    """The input's raw little-endian bytes, row-major: what GenerateTensor's `bytes` holds."""
    n = 1
    for d in dims:
        n *= int(d)
    import numpy as np
    return cast(np, values(gen, n, seed, magnitude), dtype).tobytes()


def tensor(torch, gen, dtype, dims, seed, magnitude, device):
    """The input as a torch tensor on `device`: drawn on the host, then uploaded."""
    import numpy as np
    n = 1
    for d in dims:
        n *= int(d)
    a = cast(np, values(gen, n, seed, magnitude), dtype)
    if dtype == "bfloat16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    elif dtype == "float16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.float16)
    else:
        t = torch.from_numpy(a)
    return t.reshape([int(d) for d in dims]).to(device)


def dump(cases_file, folder):
    with open(cases_file) as f:
        cases = json.load(f)
    for k, c in enumerate(cases):
        data = host_bytes(c["gen"], c["dtype"], c["dims"], c["seed"], c["magnitude"])
        with open(os.path.join(folder, "%d.bin" % k), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "dump":
        sys.exit(dump(sys.argv[2], sys.argv[3]))
    print("usage: kforge_inputs.py dump <cases.json> <folder>", file=sys.stderr)
    sys.exit(2)
