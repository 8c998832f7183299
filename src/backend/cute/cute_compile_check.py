"""Compiles CuTe DSL candidates for a GPU architecture on a machine without a GPU (CI).

    python3 cute_compile_check.py <problem folder> [<candidate.py>]   # default: its cute seed
    python3 cute_compile_check.py --all <problems folder>              # every problem's cute seed

The interpreter must have CuTe DSL (`pip install nvidia-cutlass-dsl`). For each of the problem's
size sets (default and quick) it builds CPU tensors of the problem's shapes and calls the
candidate's kf_run(inputs, outputs, attrs) as the Python worker would, except that:
- cute.compile compiles for real (for $CUTE_DSL_ARCH, sm_90a unless set: with no GPU the DSL
  cannot ask one) and returns a stand-in that checks and packs a call's arguments as the
  compiled function does, and launches nothing;
- cutlass.torch.current_stream() gives the null stream (PyTorch here has no CUDA).
So everything up to the launch is checked: the kernels trace, type-check and compile to PTX and
a cubin for the target. Whether they compute the right thing is the judge's (a GPU's) business.
A candidate that launches without cute.compile (calling a @cute.jit function directly runs it)
fails here: kf_run then needs a GPU.

Prints one line per size set; exit status 0 when every set compiled, 1 otherwise.
"""
import ast
import importlib.util
import os
import pathlib
import re
import sys
import tempfile
import time
import tomllib

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
os.environ["CUTE_DSL_KEEP"] = "ptx"  # so that a compiled function carries its PTX
os.environ.setdefault("CUTE_DSL_DUMP_DIR", tempfile.mkdtemp(prefix="kforge-cute-check-"))

DTYPES = {"float32": "float32", "float64": "float64", "float16": "float16", "bfloat16": "bfloat16",
          "int32": "int32", "int64": "int64", "int8": "int8", "uint8": "uint8"}


def size_of(expr, sizes):
    """A shape entry of problem.toml: a size name, an integer, or + - * // of them."""
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a // b}

    def ev(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return sizes[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](ev(node.left), ev(node.right))
        raise ValueError("unsupported shape expression %r" % expr)
    return expr if isinstance(expr, int) else ev(ast.parse(str(expr), mode="eval").body)


class Compiled:
    """What cute.compile produced during one kf_run call."""

    def __init__(self):
        self.kernels, self.targets, self.count = [], set(), 0


RECORD = Compiled()


def instrument():
    """Makes cute.compile compile and record into RECORD, and return a function that packs its
    arguments and launches nothing; the null stream for cutlass.torch's streams. Once per process."""
    import cuda.bindings.driver as cuda
    import cutlass.cute as cute
    import cutlass.torch as cutlass_torch
    if getattr(cute.compile, "kforge_check", False):
        return
    real = cute.compile

    def compile_only(*args, **kwargs):
        fn = real(*args, **kwargs)
        ptx = getattr(fn, "__ptx__", None) or ""
        RECORD.count += 1
        RECORD.kernels += re.findall(r"\.entry\s+(\w+)", ptx)
        RECORD.targets.update(re.findall(r"^\.target\s+(\w+)", ptx, re.M))
        generate = getattr(fn, "generate_execution_args", None)

        def marshal_only(*a, **k):  # the call's arguments checked and packed, nothing launched
            if generate is not None:
                generate(*a, **k)
        return marshal_only

    compile_only.kforge_check = True
    cute.compile = compile_only
    cutlass_torch.current_stream = lambda: cuda.CUstream(0)
    cutlass_torch.default_stream = lambda: cuda.CUstream(0)


def load(path):
    spec = importlib.util.spec_from_file_location("candidate_" + pathlib.Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "kf_run", None)):
        raise RuntimeError("%s defines no kf_run(inputs, outputs, attrs) (docs/abi-cute.md)" % path)
    return module


def tensors(problem, sizes):
    import torch
    def make(t):
        shape = [size_of(d, sizes) for d in t["shape"]]
        return t["name"], torch.zeros(shape, dtype=getattr(torch, DTYPES[t.get("dtype", "float32")]))
    return dict(make(t) for t in problem["inputs"]), dict(make(t) for t in problem["outputs"])


def check(problem_dir, candidate=None):
    """Checks one candidate on one problem; returns True when every size set compiled."""
    problem_dir = pathlib.Path(problem_dir)
    problem = tomllib.loads((problem_dir / "problem.toml").read_text())
    if candidate is None:
        seed = problem.get("seeds", {}).get("cute")
        if not seed:
            print("%s: no cute seed in problem.toml" % problem_dir.name)
            return False
        candidate = problem_dir / seed
    instrument()
    record = RECORD
    ok = True
    try:
        module = load(str(candidate))
    except Exception as e:  # a candidate's own error, reported as the judge would: it does not load
        print("%s %s: does not load: %s: %s" % (problem_dir.name, candidate, type(e).__name__, e))
        return False
    seen = []
    for which in ("value", "quick"):
        sizes = {k: (v[which] if isinstance(v, dict) else v) for k, v in problem.get("sizes", {}).items()}
        if sizes in seen:  # the candidate's cache would (rightly) compile nothing again
            continue
        seen.append(sizes)
        attrs = dict(sizes)
        attrs.update(problem.get("attrs", {}))
        inputs, outputs = tensors(problem, sizes)
        before, t0 = record.count, time.perf_counter()
        try:
            module.kf_run(inputs, outputs, attrs)
            error = "" if record.count > before else "kf_run compiled nothing with cute.compile (docs/abi-cute.md)"
        except Exception as e:
            error = "%s: %s" % (type(e).__name__, str(e).strip()[:2000])
        ok = ok and not error
        sizes_text = " ".join("%s=%d" % kv for kv in sizes.items())
        print("%s %s [%s] %s: %s" % (problem_dir.name, pathlib.Path(candidate).name, which, sizes_text,
                                     error or "compiled %d in %.2f s for %s: %s" % (
                                         record.count - before, time.perf_counter() - t0,
                                         ",".join(sorted(record.targets)), " ".join(record.kernels[-(record.count - before):]))))
    return ok


def main(argv):
    if len(argv) == 3 and argv[1] == "--all":
        dirs = sorted(p.parent for p in pathlib.Path(argv[2]).glob("*/problem.toml"))
        results = [check(d) for d in dirs]
        print("%d of %d cute seeds compiled for %s" % (sum(results), len(results), os.environ["CUTE_DSL_ARCH"]))
        return 0 if results and all(results) else 1
    if len(argv) in (2, 3) and not argv[1].startswith("-"):
        return 0 if check(argv[1], argv[2] if len(argv) == 3 else None) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
