#!/usr/bin/env python3
"""kforge's input generator in Python: the same values as GenerateTensor (src/eval/inputs.cc).

The Python worker's child draws the fresh inputs of every timed run of a kforge problem (a
problem.toml with a C++ reference) with this module, from a seed the supervisor draws; the
orchestrator regenerates a sampled run's inputs with GenerateTensor and computes its reference
with the problem's C++ reference. So both must draw the same values. The formula (inputs.h):

    mix(z)   = splitmix64's finalizer (uint64, wrapping)
    state    = mix(key_hash ^ mix(seed))          key_hash: sent by the orchestrator (KeyHash)
    draw i   = mix(state + (i + 1) * 0x9e3779b97f4a7c15)
    u        = (draw >> 11) * 2**-53             open u = ((draw >> 11) + 1) * 2**-53
    normal   = r cos t, r sin t for elements 2k, 2k + 1: r = sqrt(-2 ln(open u1)), t = 2 pi u2
               (draws 2k and 2k + 1), with ln, cos and sin the polynomials of inputs.cc

numpy's uint64 arithmetic wraps like C++'s, so the draws are bit-exact; ln, cos and sin are the
same polynomials evaluated with the same float64 operations in the same order (+, -, *, / and
sqrt, each rounded once by IEEE, and no fused multiply-add in either), so the values are
bit-exact too.

On an accelerator the child draws with PyTorch instead (torch_values: the same operations on
int64 and float64 tensors, bit-exact too).

`python3 kforge_inputs.py dump <cases.json> <folder> [--torch <device>]` writes each case's
bytes to <folder>/<index>.bin, drawn by numpy or by PyTorch on <device> (the cross-check
tests, src/eval/inputs_test.cc).
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


def draws(np, state, first, count):
    """Draws first .. first + count - 1 of the stream that starts at `state`, shifted right by 11."""
    i = np.arange(first + 1, first + count + 1, dtype=np.uint64)
    return mix(np, np.uint64(state) + i * np.uint64(GOLDEN)) >> np.uint64(11)


def uniforms(np, state, first, count):
    """u in [0, 1) for draws first .. first + count - 1."""
    return draws(np, state, first, count).astype(np.float64) * (1.0 / 9007199254740992.0)


# The polynomials of inputs.cc, highest power first, evaluated by horner() in numpy and PyTorch.
LN_COEFFS = (0.09090909090909091, 0.1111111111111111, 0.14285714285714285, 0.2, 0.3333333333333333, 1.0)
COS_COEFFS = (4.779477332387385e-14, -1.1470745597729725e-11, 2.08767569878681e-09, -2.755731922398589e-07,
              2.48015873015873e-05, -0.001388888888888889, 0.041666666666666664, -0.5, 1.0)
SIN_COEFFS = (-7.647163731819816e-13, 1.6059043836821613e-10, -2.505210838544172e-08, 2.7557319223985893e-06,
              -0.0001984126984126984, 0.008333333333333333, -0.16666666666666666, 1.0)


def horner(x, coeffs):
    """coeffs[0] x^(n-1) + ... + coeffs[-1], one multiply and one add per step (never fused), for
    a numpy array or a PyTorch tensor x: x * c is c * x bit for bit."""
    p = x * coeffs[0] + coeffs[1]
    for c in coeffs[2:]:
        p = p * x + c
    return p


def ln(np, u):
    """inputs.cc's Ln: ln u for u in (0, 1] from the exponent's bits and +, -, *, /."""
    bits = u.view(np.uint64)
    e = ((bits >> np.uint64(52)) & np.uint64(0x7ff)).astype(np.int64) - 1023
    m = ((bits & np.uint64(0x000fffffffffffff)) | np.uint64(0x3ff0000000000000)).view(np.float64)
    big = m > 1.4142135623730951
    m = np.where(big, m * 0.5, m)
    e = e.astype(np.float64) + np.where(big, 1.0, 0.0)
    t = (m - 1.0) / (m + 1.0)
    return e * 0.6931471805599453 + 2.0 * t * horner(t * t, LN_COEFFS)


def cos_sin_2pi(xp, u):
    """inputs.cc's CosSin2Pi: cos and sin of 2 pi u for u in [0, 1); xp is numpy or torch (the
    same floor, where and arithmetic)."""
    f4 = u * 4.0
    q = xp.floor(f4)
    a = (f4 - q) * 1.5707963267948966
    a2 = a * a
    pc = horner(a2, COS_COEFFS)
    ps = horner(a2, SIN_COEFFS) * a
    cos = xp.where(q == 0, pc, xp.where(q == 1, -ps, xp.where(q == 2, -pc, ps)))
    sin = xp.where(q == 0, ps, xp.where(q == 1, pc, xp.where(q == 2, -ps, -pc)))
    return cos, sin


def draw(np, gen, state, start, count, magnitude):
    """Elements start .. start + count - 1 as float64, before the cast (inputs.cc's Draw); `start`
    is even, so that no normal pair straddles two calls."""
    kind, a, b = gen["kind"], float(gen["a"]), float(gen["b"])
    if kind == "normal":
        pairs = (count + 1) // 2
        d = draws(np, state, start, 2 * pairs)
        u1 = (d[0::2] + np.uint64(1)).astype(np.float64) * (1.0 / 9007199254740992.0)
        u2 = d[1::2].astype(np.float64) * (1.0 / 9007199254740992.0)
        r = np.sqrt(-2.0 * ln(np, u1))
        cos, sin = cos_sin_2pi(np, u2)
        x = np.empty(2 * pairs, dtype=np.float64)
        x[0::2] = a + b * (r * cos)
        x[1::2] = a + b * (r * sin)
        x = x[:count]
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


# --- The same draws by PyTorch operations where the tensor lives (a GPU: milliseconds for what
# numpy takes a fifth of a second over on the host). int64 tensors stand for uint64: + and *
# wrap alike in two's complement, and a right shift is made logical by masking the sign's copies.
# Each operation is one PyTorch call, so nothing is fused (no multiply-add) and every float64
# operation rounds once, as in numpy and inputs.cc.

TORCH_CHUNK = 1 << 24  # elements at a time on an accelerator


def _signed(u):
    return u - (1 << 64) if u >= 1 << 63 else u


def _shr(x, k):
    """Logical right shift of an int64 tensor holding uint64 bits."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def _tmix(x):
    x = x ^ _shr(x, 30)
    x = x * _signed(M1)
    x = x ^ _shr(x, 27)
    x = x * _signed(M2)
    return x ^ _shr(x, 31)


def _tdraws(torch, state, first, count, device):
    i = torch.arange(first + 1, first + count + 1, dtype=torch.int64, device=device)
    return _shr(_tmix(i * _signed(GOLDEN) + _signed(state)), 11)


def _tln(torch, u):
    bits = u.view(torch.int64)  # u > 0: the sign bit is clear
    e = ((bits >> 52) & 0x7ff) - 1023
    m = ((bits & 0x000fffffffffffff) | 0x3ff0000000000000).view(torch.float64)
    big = m > 1.4142135623730951
    m = torch.where(big, m * 0.5, m)
    e = e.to(torch.float64) + big.to(torch.float64)
    t = (m - 1.0) / (m + 1.0)
    return e * 0.6931471805599453 + 2.0 * t * horner(t * t, LN_COEFFS)


def _tdraw(torch, gen, state, start, count, magnitude, device):
    kind, a, b = gen["kind"], float(gen["a"]), float(gen["b"])
    scale = 1.0 / 9007199254740992.0
    if kind == "normal":
        pairs = (count + 1) // 2
        d = _tdraws(torch, state, start, 2 * pairs, device)
        u1 = (d[0::2] + 1).to(torch.float64) * scale
        u2 = d[1::2].to(torch.float64) * scale
        del d
        r = torch.sqrt(_tln(torch, u1) * -2.0)
        cos, sin = cos_sin_2pi(torch, u2)
        x = torch.empty(2 * pairs, dtype=torch.float64, device=device)
        x[0::2] = (r * cos) * b + a
        x[1::2] = (r * sin) * b + a
        x = x[:count]
        if gen.get("positive", False):
            x = x.abs()
        return x * magnitude
    u = _tdraws(torch, state, start, count, device).to(torch.float64) * scale
    if kind == "uniform":
        return (u * (b - a) + a) * magnitude
    if kind == "integers":
        return torch.floor(u * (b - a + 1)) + a
    raise ValueError("unknown distribution kind %r (normal, uniform, integers)" % kind)


def torch_values(torch, gen, n, seed, magnitude, device):
    """All n elements of one input as a float64 tensor on `device`: values() by PyTorch."""
    state = mix_int(int(gen["key_hash"]) ^ mix_int(int(seed)))
    out = torch.empty(n, dtype=torch.float64, device=device)
    chunk = CHUNK if torch.device(device).type == "cpu" else TORCH_CHUNK
    for s in range(0, n, chunk):
        out[s:s + chunk] = _tdraw(torch, gen, state, s, min(chunk, n - s), float(magnitude), device)
    return out


def torch_cast(torch, x, dtype):
    """cast() by PyTorch: float64 -> dtype, round to nearest (16-bit floats through float32)."""
    if dtype == "float64":
        return x
    if dtype in ("float32", "float16", "bfloat16"):
        f = x.to(torch.float32)
        return f if dtype == "float32" else f.to(torch.float16 if dtype == "float16" else torch.bfloat16)
    if dtype in ("int32", "int64"):
        return x.to(torch.int32 if dtype == "int32" else torch.int64)
    raise ValueError("unsupported dtype %r" % dtype)


def tensor(torch, gen, dtype, dims, seed, magnitude, device):
    """The input as a torch tensor on `device`: drawn there by PyTorch where it is an
    accelerator, else on the host by numpy."""
    n = 1
    for d in dims:
        n *= int(d)
    if torch.device(device).type != "cpu":
        return torch_cast(torch, torch_values(torch, gen, n, seed, magnitude, device), dtype).reshape([int(d) for d in dims])
    import numpy as np
    a = cast(np, values(gen, n, seed, magnitude), dtype)
    if dtype == "bfloat16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    elif dtype == "float16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.float16)
    else:
        t = torch.from_numpy(a)
    return t.reshape([int(d) for d in dims]).to(device)


def dump(cases_file, folder, device=None):
    """Each case's bytes; with `device`, drawn by PyTorch there (torch_values)."""
    with open(cases_file) as f:
        cases = json.load(f)
    for k, c in enumerate(cases):
        if device:
            import torch
            n = 1
            for d in c["dims"]:
                n *= int(d)
            t = torch_cast(torch, torch_values(torch, c["gen"], n, c["seed"], c["magnitude"], device), c["dtype"])
            if c["dtype"] in ("float16", "bfloat16"):
                t = t.view(torch.int16)
            data = t.cpu().numpy().tobytes()
        else:
            data = host_bytes(c["gen"], c["dtype"], c["dims"], c["seed"], c["magnitude"])
        with open(os.path.join(folder, "%d.bin" % k), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    if len(sys.argv) in (4, 6) and sys.argv[1] == "dump" and (len(sys.argv) == 4 or sys.argv[4] == "--torch"):
        sys.exit(dump(sys.argv[2], sys.argv[3], sys.argv[5] if len(sys.argv) == 6 else None))
    print("usage: kforge_inputs.py dump <cases.json> <folder> [--torch <device>]", file=sys.stderr)
    sys.exit(2)
