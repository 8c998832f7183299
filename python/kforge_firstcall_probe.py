"""Where a warm job's first call of a Triton kernel spends its time (a benchmark program, not a
test; trusted code only: it runs a bundled seed, never a candidate).

A warm verdict's candidate child (kforge_pychild.py) makes the candidate's first call under the
kernel recorder (CUPTI), in a process forked from a zygote that imported PyTorch and Triton
without touching the device, with the candidate's Triton cache already filled. On an H100 that
call ("recorded call") took 1.3-1.5 s of a warm KernelBench verdict, against 0.65 s in a cold
one. This program makes the same call in the same conditions and splits it:

  parent        imports torch and triton (the zygote's state), fills a private Triton cache with
                one call in a child (the compile), then for each round forks fresh children:
  plain         CUDA context (a one-element op), the first call, the second call
  cupti         CUDA context, CUPTI started as the child does (kforge_kernels.new_recorder),
                the first call, the recorder's finish, the second call
  profiled      as cupti, with cProfile around the first call: its 20 costliest functions
                (cumulative), printed once
The plain and cupti rounds run twice: from the parent as imported, and again after the parent
made the zygote's Triton warm-up (kforge_pyworker.warm_triton); the profiled child after both.

Each step's time is the host's wall clock with a synchronize after it. Medians over --rounds.

Usage: python3 kforge_firstcall_probe.py [--kernel problems/gelu/seeds/naive_triton.py]
                                         [--n 2097152] [--rounds 5]
"""
import argparse
import cProfile
import importlib.util
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time


def load_kernel(path):
    spec = importlib.util.spec_from_file_location("probe_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def child(kind, args, write_fd):
    """One fresh process's steps, as {"step": seconds} on write_fd (and a profile text)."""
    import torch
    out, laps = {}, []
    t = time.perf_counter()

    def lap(name):
        nonlocal t
        torch.cuda.synchronize()
        now = time.perf_counter()
        out[name] = now - t
        laps.append(name)
        t = now
    torch.zeros(1, device="cuda")
    lap("context")
    mod = load_kernel(args.kernel)
    x = torch.randn(args.n, device="cuda")
    y = torch.empty_like(x)
    lap("load and inputs")

    def call():
        mod.kf_run({"x": x}, {"y": y}, {"n": args.n})
    recorder = None
    if kind in ("cupti", "profiled"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import kforge_kernels
        recorder, why = kforge_kernels.new_recorder(torch, "probe")
        if recorder is None:
            out["recorder"] = why
        lap("recorder start")
    profile_text = ""
    if kind == "profiled":
        prof = cProfile.Profile()
        prof.enable()
        call()
        torch.cuda.synchronize()
        prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(20)
        profile_text = s.getvalue()
    else:
        call()
    lap("first call")
    if recorder is not None:
        record = recorder.finish()
        lap("recorder finish")
        out["record kernels"] = len(record.get("kernels", [])) if isinstance(record, dict) else None
    call()
    lap("second call")
    os.write(write_fd, (json.dumps({"steps": out, "profile": profile_text}) + "\n").encode())


def fork_child(kind, args):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            child(kind, args, w)
        except BaseException as e:  # reported, never raised in the parent's copy
            os.write(w, (json.dumps({"error": "%s: %s" % (type(e).__name__, e)}) + "\n").encode())
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data.decode() or '{"error": "the child wrote nothing"}')


def rounds(args, parent):
    """--rounds fresh children of each kind, forked from the parent as it is now: step medians."""
    results = {"plain": [], "cupti": []}
    for _ in range(args.rounds):
        for kind in results:
            got = fork_child(kind, args)
            if "error" in got:
                print("%s: %s" % (kind, got["error"]), flush=True)
                continue
            results[kind].append(got["steps"])
    for kind, runs in results.items():
        if not runs:
            continue
        names = [k for k, v in runs[0].items() if isinstance(v, float)]
        print("%-6s median over %d fresh children of a %s: %s" % (kind, len(runs), parent, "  ".join(
            "%s %.3f s" % (k, statistics.median(r[k] for r in runs if k in r)) for k in names)), flush=True)
        notes = {k: v for k, v in runs[0].items() if not isinstance(v, float)}
        if notes:
            print("        " + json.dumps(notes), flush=True)


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--kernel", default=os.path.join(here, "..", "problems", "gelu", "seeds", "naive_triton.py"))
    ap.add_argument("--n", type=int, default=2097152)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    args.kernel = os.path.abspath(args.kernel)
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="kforge-firstcall-triton-")
    t0 = time.perf_counter()
    import torch
    import triton
    print("kforge_firstcall_probe: %s, n=%d, torch %s, triton %s; imports %.2f s"
          % (os.path.basename(args.kernel), args.n, torch.__version__, triton.__version__, time.perf_counter() - t0), flush=True)
    if torch.cuda.is_initialized():
        raise SystemExit("kforge_firstcall_probe: importing torch initialised CUDA; a fork would break it")
    # The compile: the cache every later child finds filled.
    first = fork_child("plain", args)
    if "error" in first:
        raise SystemExit("kforge_firstcall_probe: the compiling child failed (this program needs a CUDA device): " + first["error"])
    print("compile (cold cache): " + "  ".join("%s %.3f s" % (k, v) for k, v in first["steps"].items()
                                               if isinstance(v, float)), flush=True)
    rounds(args, "parent that only imported")
    # The zygote's own warm-up (kforge_pyworker.warm_triton), then the same children again.
    sys.path.insert(0, here)
    import kforge_pyworker
    info = {}
    kforge_pyworker.warm_triton(info)
    print("zygote warm-up in the parent: " + json.dumps(info), flush=True)
    rounds(args, "parent after the zygote's warm-up")
    prof = fork_child("profiled", args)
    if "error" in prof:
        print("profiled: " + prof["error"])
    else:
        print("profiled first call (cProfile, cumulative):")
        print(prof["profile"])


if __name__ == "__main__":
    main()
