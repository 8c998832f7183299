#!/usr/bin/env python3
"""kforge's Python worker: hosts PyTorch references, baselines and Python candidates.

The C++ orchestrator starts it in the same sandbox as kforge-worker and talks the protocol in
docs/python-worker.md: it writes job.json (and input files) into a private folder, runs
`python3 kforge_pyworker.py run <folder>` there, and reads result.json plus raw output files.
The worker reports raw data only (outputs, checksums, timings, thread counts); the
orchestrator compares and judges. `probe` prints what this interpreter can do.

This is the only Python in kforge; it needs PyTorch, and Triton for Triton candidates.
"""
import copy
import hashlib
import inspect
import json
import os
import re
import sys
import time
import traceback
import types

STDERR_TAG = "kforge-worker: "
MODEL_SEED = 42  # the seed KernelBench also uses for the model's parameters


STARTED = time.perf_counter()
STAGE_SECONDS = {}  # seconds since start at which each stage began; reported as stage_seconds
_last = ["start", STARTED]


def stage(name):
    now = time.perf_counter()
    STAGE_SECONDS[_last[0]] = STAGE_SECONDS.get(_last[0], 0.0) + now - _last[1]
    _last[0], _last[1] = name.split(" set ")[0], now
    print(STDERR_TAG + name, file=sys.stderr, flush=True)


class WorkerError(Exception):
    """A failure of the candidate (or the problem) at a named stage."""

    def __init__(self, stage_name, message):
        super().__init__(message)
        self.stage = stage_name


# --- Results: rewritten atomically after every step, so a crash keeps what was done. -----------

class Results:
    def __init__(self, folder):
        self.path = os.path.join(folder, "result.json")
        self.data = {}

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f)
        os.replace(tmp, self.path)


# --- Tensors. --------------------------------------------------------------------------------

def torch_dtypes():
    import torch
    return {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
            "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64}


def dtype_name(dt):
    for name, t in torch_dtypes().items():
        if t == dt:
            return name
    raise WorkerError("describe", "unsupported tensor dtype %s (kforge handles float32, float64, "
                      "float16, bfloat16, int32, int64)" % dt)


def tensor_bytes(t):
    import torch
    t = t.detach().contiguous().cpu()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def tensor_hash(t):
    return hashlib.blake2b(tensor_bytes(t), digest_size=8).hexdigest()


def read_tensor(folder, desc, device):
    import numpy
    import torch
    dt = torch_dtypes()[desc["dtype"]]
    raw = open(os.path.join(folder, desc["file"]), "rb").read()
    if dt in (torch.bfloat16, torch.float16):
        t = torch.from_numpy(numpy.frombuffer(raw, dtype=numpy.int16).copy()).view(dt)
    else:
        npdt = {torch.float32: numpy.float32, torch.float64: numpy.float64,
                torch.int32: numpy.int32, torch.int64: numpy.int64}[dt]
        t = torch.from_numpy(numpy.frombuffer(raw, dtype=npdt).copy())
    return t.reshape(desc["dims"]).to(device)


def write_tensor(folder, name, t):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(tensor_bytes(t))


POISON = {  # bit patterns, as in src/worker/protocol.cc
    "float32": (0x7fc0dead, 0xffc0beef), "float64": (0x7ff80000dead0001, 0xfff80000beef0002),
    "float16": (0x7e01, 0xfe02), "bfloat16": (0x7fc1, 0xffc2),
    "int32": (-0x7ead1234, 0x5eed5eed), "int64": (-0x7ead12345678, 0x5eed5eed5eed),
}
GUARD_ELEMENTS = 1024


def poison_fill(t, name, which):
    import torch
    bits = POISON[name][which]
    int_view = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
                torch.bfloat16: torch.int16, torch.int32: torch.int32, torch.int64: torch.int64}
    width = t.element_size() * 8
    if bits >= 1 << (width - 1):
        bits -= 1 << width
    t.view(int_view[t.dtype]).fill_(bits)


# --- Loading problems and candidates. ---------------------------------------------------------

CONSTANT_RE = r"^({name})[ \t]*(?::[^=\n]*)?=[^\n]*$"


def module_constants(source):
    """Top-level `name = <int or float literal>` lines: the problem's size constants."""
    out = {}
    for m in re.finditer(r"^([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*([-+]?[0-9][0-9_.eE+-]*)[ \t]*(#.*)?$",
                         source, re.M):
        text = m.group(2)
        try:
            out[m.group(1)] = int(text)
        except ValueError:
            try:
                out[m.group(1)] = float(text)
            except ValueError:
                pass
    return out


def load_module(path, name, overrides=None):
    """Executes a Python file as a fresh module. Overrides replace top-level constant lines in
    the source before it runs, so constants derived from them follow."""
    source = open(path).read()
    constants = module_constants(source)
    for key, value in (overrides or {}).items():
        if key not in constants:
            raise WorkerError("load", "'%s' is not a module-level constant of %s; its constants are: %s"
                              % (key, os.path.basename(path), ", ".join(sorted(constants)) or "none"))
        source = re.sub(CONSTANT_RE.format(name=re.escape(key)), "%s = %r" % (key, value), source,
                        count=1, flags=re.M)
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def param_name(qualified, taken):
    base = re.sub(r"[^A-Za-z0-9_]", "_", qualified)
    name = base
    while name in taken:
        name += "_param"
    taken.add(name)
    return name


class Instance:
    """One KernelBench problem at one size assignment and seed: model, inputs, names."""

    def __init__(self, module, seed, magnitude, device, model=None):
        import torch
        self.module = module
        torch.manual_seed(MODEL_SEED)
        self.init_inputs = list(module.get_init_inputs())
        torch.manual_seed(MODEL_SEED)
        # The module's own mode (training, as constructed), as KernelBench runs it: BatchNorm uses
        # batch statistics. Every forward call is preceded by torch.manual_seed(seed) so that
        # random operations (dropout) draw the same numbers in the reference and the candidate.
        # Sets with the same constants share one model (its parameters depend only on them).
        self.model = model if model is not None else module.Model(*self.init_inputs)
        self.seed = seed
        torch.manual_seed(seed)
        args = list(module.get_inputs())
        try:
            names = [p for p in inspect.signature(module.Model.forward).parameters if p != "self"]
        except (TypeError, ValueError):
            names = []
        if len(names) != len(args) or any(n.startswith("*") for n in names):
            names = ["x%d" % i for i in range(len(args))]
        self.arg_names = names
        self.args = []
        for a in args:
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                a = a * magnitude
            self.args.append(a.to(device) if isinstance(a, torch.Tensor) else a)
        self.model.to(device)
        taken = set(self.arg_names)
        self.params = []  # (name, kind, qualified, tensor)
        for q, p in self.model.named_parameters():
            self.params.append((param_name(q, taken), "param", q, p.data))
        for q, b in self.model.named_buffers():
            self.params.append((param_name(q, taken), "buffer", q, b))

    def tensor_inputs(self):
        """(name, kind, tensor) for every tensor the computation reads."""
        import torch
        out = [(n, "input", a) for n, a in zip(self.arg_names, self.args) if isinstance(a, torch.Tensor)]
        return out + [(n, k, t) for n, k, _, t in self.params]


def as_outputs(result):
    import torch
    if isinstance(result, torch.Tensor):
        return [("out", result)]
    if isinstance(result, (tuple, list)) and all(isinstance(r, torch.Tensor) for r in result):
        return [("out%d" % i, r) for i, r in enumerate(result)]
    raise WorkerError("run", "forward returned %s; kforge compares tensors or tuples of tensors"
                      % type(result).__name__)


# --- The device: synchronisation, timers, cache flush. ---------------------------------------

class Device:
    def __init__(self, spec):
        import torch
        self.spec = spec
        self.cuda = spec.startswith("cuda")
        self.torch = torch
        if self.cuda:
            if not torch.cuda.is_available():
                raise WorkerError("device", "PyTorch sees no CUDA device (torch %s, CUDA %s); run on a "
                                  "machine with an NVIDIA GPU or use --device cpu" % (torch.__version__, torch.version.cuda))
            self.index = int(spec.split(":")[1]) if ":" in spec else 0
            torch.cuda.set_device(self.index)
            props = torch.cuda.get_device_properties(self.index)
            l2 = getattr(props, "L2_cache_size", 50 << 20)
            self.llc = l2
            self.reset_persisting_l2()
        else:
            self.llc = cpu_llc_bytes()
        self.flush_buffer = None

    def reset_persisting_l2(self):
        """cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0): a persisting window would
        survive the flush."""
        import ctypes
        self.l2_reset = False
        for lib in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
            try:
                rt = ctypes.CDLL(lib)
                self.l2_reset = rt.cudaDeviceSetLimit(0x06, ctypes.c_size_t(0)) == 0
                break
            except OSError:
                continue

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def flush(self):
        if self.flush_buffer is None:
            n = max(2 * self.llc, 64 << 20) // 4
            self.flush_buffer = self.torch.empty(n, dtype=self.torch.float32, device=self.spec)
        self.flush_buffer.fill_(1.0)
        self.sync()

    def fingerprint(self):
        t = self.torch
        fp = {"python": sys.version.split()[0], "torch": t.__version__, "device": self.spec}
        if self.cuda:
            props = t.cuda.get_device_properties(self.index)
            fp.update({"name": props.name, "cuda": t.version.cuda,
                       "compute_capability": "%d.%d" % (props.major, props.minor),
                       "memory_bytes": props.total_memory, "l2_bytes": self.llc,
                       "persisting_l2_reset": self.l2_reset})
        else:
            fp.update({"name": cpu_name(), "threads": t.get_num_threads(), "llc_bytes": self.llc})
        try:
            import triton
            fp["triton"] = triton.__version__
        except Exception:
            pass
        return fp

    def timed_call(self, fn):
        """Runs fn once between device timers; returns (output, device_ms, host_ms)."""
        t = self.torch
        if self.cuda:
            start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            h0 = time.perf_counter()
            start.record()
            out = fn()
            end.record()
            t.cuda.synchronize()
            h1 = time.perf_counter()
            return out, start.elapsed_time(end), (h1 - h0) * 1e3
        h0 = time.perf_counter()
        out = fn()
        h1 = time.perf_counter()
        return out, (h1 - h0) * 1e3, (h1 - h0) * 1e3


def cpu_llc_bytes():
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            try:
                text = open(os.path.join(base, entry, "size")).read().strip()
                mult = {"K": 1 << 10, "M": 1 << 20}.get(text[-1], 1)
                best = max(best, int(text.rstrip("KM")) * mult)
            except (OSError, ValueError):
                pass
    except OSError:
        pass
    return best or 32 << 20


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu"


def thread_count():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("Threads:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def precision_state(torch):
    state = {"float32_matmul_precision": torch.get_float32_matmul_precision()
             if hasattr(torch, "get_float32_matmul_precision") else "highest"}
    if torch.cuda.is_available():
        state["tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
        state["tf32_cudnn"] = bool(torch.backends.cudnn.allow_tf32)
        state["fp16_reduced_precision_reduction"] = bool(
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
    return state


# --- Jobs. -----------------------------------------------------------------------------------

class Job:
    def __init__(self, folder):
        self.folder = folder
        with open(os.path.join(folder, "job.json")) as f:
            self.spec = json.load(f)
        self.results = Results(folder)
        self.modules = {}
        self.models = {}
        self.models64 = {}
        self.new_models = {}
        self.hashes = {}
        self.copies = {}
        self.lock_handle = None

    def lock(self, exclusive):
        """The device lock (docs/python-worker.md): shared while the job computes references and
        checks, exclusive while it times, so that nothing else runs on the device during timed
        runs. Long CPU-bound phases (imports, torch.compile, inline builds) hold no lock."""
        path = self.spec.get("lock_file")
        if not path:
            return
        import fcntl
        if self.lock_handle is None:
            # Read-only: the sandbox's filesystem is, and flock() needs no write access.
            self.lock_handle = open(path, "r")
        fcntl.flock(self.lock_handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)

    def unlock(self):
        if self.lock_handle is not None:
            import fcntl
            fcntl.flock(self.lock_handle, fcntl.LOCK_UN)

    def module(self, overrides):
        key = json.dumps(overrides, sort_keys=True)
        if key not in self.modules:
            problem = self.spec["problem"]
            self.modules[key] = load_module(os.path.join(self.folder, problem["module"]),
                                            "kforge_problem_%d" % len(self.modules), overrides)
        return self.modules[key]

    def instance(self, s, device):
        key = json.dumps(s.get("overrides", {}), sort_keys=True)
        inst = Instance(self.module(s.get("overrides", {})), s["seed"], s.get("magnitude", 1.0), device,
                        self.models.get(key))
        self.models[key] = inst.model
        return inst

    def hash(self, t):
        """tensor_hash, once per tensor object (parameters are shared between sets)."""
        key = (id(t), t.data_ptr())
        if key not in self.hashes:  # the entry keeps t alive, so its id is not reused
            self.hashes[key] = (t, tensor_hash(t))
        return self.hashes[key][1]

    def pristine(self, t):
        """A private copy of an input, to compare with after each run (exact, on the device)."""
        key = (id(t), t.data_ptr())
        if key not in self.copies:
            self.copies[key] = (t, t.detach().clone())
        return self.copies[key][1]


def run_reference(job, device):
    """Describes each set (inputs, parameters, outputs) and computes its reference output in
    float64 where the model's operations allow, else in the problem's own precision."""
    import torch
    res = job.results
    res.data["sets"] = []
    for i, s in enumerate(job.spec["sets"]):
        stage("reference set %d" % i)
        inst = job.instance(s, device.spec)
        constants = module_constants(open(inst.module.__file__).read())
        constants.update(s.get("overrides", {}))
        desc = {"set": i, "constants": constants,
                "init_inputs": [repr(v) for v in inst.init_inputs],
                "scalars": [{"name": n, "value": a} for n, a in zip(inst.arg_names, inst.args)
                            if not isinstance(a, torch.Tensor)],
                "inputs": [], "outputs": []}
        for name, kind, t in inst.tensor_inputs():
            d = {"name": name, "kind": kind, "dtype": dtype_name(t.dtype), "dims": list(t.shape),
                 "hash": job.hash(t)}
            if job.spec.get("write_inputs", False):
                d["file"] = "in_%d_%s.bin" % (i, name)
                write_tensor(job.folder, d["file"], t)
            desc["inputs"].append(d)
        with torch.no_grad():
            torch.manual_seed(inst.seed)
            state = copy.deepcopy(inst.model.state_dict())
            native = as_outputs(inst.model(*inst.args))
            flops = count_flops(inst)
            if flops is not None:
                desc["flops"] = flops
            inst.model.load_state_dict(state)  # undo running-statistics updates
            precision = "float64"
            try:
                key = id(inst.model)
                if key not in job.models64:
                    job.models64 = {key: copy.deepcopy(inst.model).double()}  # one at a time
                model64 = job.models64[key]
                model64.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in state.items()})
                args64 = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                          for a in inst.args]
                torch.manual_seed(inst.seed)
                ref = as_outputs(model64(*args64))
            except Exception as e:  # an operation without a float64 kernel on this device
                precision = "native (float64 failed: %s)" % str(e).splitlines()[0][:200]
                ref = native
        for (name, t), (_, r) in zip(native, ref):
            f = "ref_%d_%s.bin" % (i, name)
            write_tensor(job.folder, f, r.double() if r.is_floating_point() else r)
            desc["outputs"].append({"name": name, "dtype": dtype_name(t.dtype), "dims": list(t.shape),
                                    "file": f, "reference_dtype": "float64" if r.is_floating_point() else dtype_name(r.dtype)})
        desc["reference_precision"] = precision
        res.data["sets"].append(desc)
        device.sync()
        res.save()


def count_flops(inst):
    """Floating-point operations of one forward pass as PyTorch's FlopCounterMode counts them
    (matmuls and convolutions; PyTorch 2.1 and newer), else None."""
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        return None
    try:
        counter = FlopCounterMode(display=False)
        with counter:
            inst.model(*inst.args)
        return float(counter.get_total_flops())
    except Exception:
        return None


def make_callable(job, device, s, inst_cache):
    """Returns fn for set s: fn() runs the implementation once and returns the list of output
    tensors (kf_run candidates: the preallocated, guarded buffers in fn.kforge_outputs)."""
    import torch
    spec = job.spec
    mode = spec["mode"]
    i = spec["sets"].index(s)
    kind = spec["problem"]["kind"]
    if kind == "kernelbench":
        inst = job.instance(s, device.spec)
        hashes = s.get("input_hashes")
        if hashes:
            got = {n: job.hash(t) for n, _, t in inst.tensor_inputs()}
            if got != hashes:
                raise WorkerError("inputs", "regenerated inputs differ from the reference's (the problem's "
                                  "get_inputs is not deterministic under a fixed seed)")
        # Running statistics (buffers) may legitimately change; inputs and parameters may not.
        inputs = {n: t for n, k, t in inst.tensor_inputs() if k != "buffer"}
        args = inst.args
    else:
        inst = None
        inputs = {d["name"]: read_tensor(job.folder, d, device.spec) for d in s["inputs"]}
        args = list(inputs.values())
    attrs = {a["name"]: (a["i"] if a.get("integer", False) else a["f"]) for a in s.get("attrs", [])}
    inst_cache[i] = (inst, inputs)
    if mode == "baseline":
        model = inst.model
        if spec["baseline"] == "compile":
            if not hasattr(torch, "compile"):
                raise WorkerError("compile", "torch %s has no torch.compile (PyTorch 2.0 or newer has it)" % torch.__version__)
            model = torch.compile(model)
        return seeded(inst.seed, lambda: [t for _, t in as_outputs(model(*args))])
    candidate = job.candidate
    if spec["entry"] == "ModelNew":
        if inst is None:
            raise WorkerError("load", "a ModelNew candidate needs a PyTorch problem (KernelBench format); "
                              "for a kforge problem write kf_run(inputs, outputs, attrs)")
        key = id(inst.model)  # one ModelNew per reference model (sets with the same constants)
        if key not in job.new_models:
            torch.manual_seed(MODEL_SEED)
            model = candidate.ModelNew(*inst.init_inputs)
            copy_parameters(inst.model, model, job)
            job.new_models[key] = model.to(device.spec)
        model = job.new_models[key]
        return seeded(inst.seed, lambda: [t for _, t in as_outputs(model(*args))])
    entry = getattr(candidate, spec["entry"], None)
    if entry is None:
        raise WorkerError("load", "the candidate defines no '%s'; a Triton candidate defines "
                          "kf_run(inputs, outputs, attrs) (docs/abi-triton.md)" % spec["entry"])
    dtypes = torch_dtypes()
    outs = []
    for d in s["outputs"]:
        n = 1
        for x in d["dims"]:
            n *= x
        flat = torch.empty(n + GUARD_ELEMENTS, dtype=dtypes[d["dtype"]], device=device.spec)
        outs.append((d["name"], d["dtype"], flat[:n].view(d["dims"]), flat[n:]))
    outputs = {name: t for name, _, t, _ in outs}

    def call():
        entry(inputs, outputs, attrs)
        return [t for _, _, t, _ in outs]
    call.kforge_outputs = outs
    return call


def seeded(seed, fn):
    import torch

    def call():
        torch.manual_seed(seed)
        return fn()
    return call


def copy_parameters(reference, candidate, job):
    """Gives ModelNew the reference's parameters when their names and shapes match (KernelBench
    relies on equal seeds instead); notes when they do not."""
    ref, cand = reference.state_dict(), candidate.state_dict()
    if set(ref) == set(cand) and all(ref[k].shape == cand[k].shape for k in ref):
        candidate.load_state_dict(ref)
        job.results.data["parameters"] = "copied from the reference (%d tensors)" % len(ref)
    else:
        job.results.data["parameters"] = ("not copied: ModelNew's state (%s) differs from Model's (%s); "
                                          "both were initialised with seed %d" %
                                          (", ".join(sorted(cand)) or "empty", ", ".join(sorted(ref)) or "empty",
                                           MODEL_SEED))


def poison(call, which):
    outs = getattr(call, "kforge_outputs", None)
    if outs:
        for _, dt, t, guard in outs:
            poison_fill(t, dt, which)
            poison_fill(guard, dt, which)


def guard_intact(call, which):
    import torch
    for name, dt, _, guard in getattr(call, "kforge_outputs", None) or []:
        ref = torch.empty_like(guard)
        poison_fill(ref, dt, which)
        if tensor_bytes(guard) != tensor_bytes(ref):
            return "wrote past the end of output '%s'" % name
    return None


def input_hashes(job, inputs):
    """Per input "same", or "changed" when it differs from the copy taken before the first run."""
    import torch
    def bits(t):  # compare bit patterns: NaN inputs compare equal to themselves
        width = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[t.element_size()]
        return t.view(width) if t.is_floating_point() else t
    return ["same" if torch.equal(bits(t), bits(job.pristine(t))) else "changed" for t in inputs.values()]


def check_outputs(outs, expected):
    """Outputs must have the shapes and dtypes the reference has."""
    if len(outs) != len(expected):
        raise WorkerError("check", "returned %d outputs; the reference returns %d" % (len(outs), len(expected)))
    for t, d in zip(outs, expected):
        if list(t.shape) != list(d["dims"]) or dtype_name(t.dtype) != d["dtype"]:
            raise WorkerError("check", "output '%s' is %s %s; the reference's is %s %s" % (
                d["name"], dtype_name(t.dtype), list(t.shape), d["dtype"], d["dims"]))


def run_checks(job, device, calls, inst_cache):
    import torch
    res = job.results
    res.data["checks"] = []
    for n, i in enumerate(job.spec.get("checks", [])):
        s = job.spec["sets"][i]
        call = calls[i]
        _, inputs = inst_cache[i]
        entry = {"set": i, "input_hashes_before": input_hashes(job, inputs)}
        for which, letter in ((0, "a"), (1, "b")) if job.spec.get("check_twice", True) else ((0, "a"),):
            stage("check set %d run %s" % (i, letter))
            poison(call, which)
            device.sync()
            with torch.no_grad():
                outs, ms, _ = device.timed_call(call)
            check_outputs(outs, s["outputs"])
            overrun = guard_intact(call, which)
            if overrun:
                entry["overrun"] = overrun
            for t, d in zip(outs, s["outputs"]):
                write_tensor(job.folder, "out_%d_%s_%s.bin" % (i, letter, d["name"]), t)
            entry["ms_" + letter] = ms
            if n == 0 and letter == "a":
                res.data["threads_after_first_run"] = thread_count()
        entry["input_hashes_after"] = input_hashes(job, inputs)
        res.data["checks"].append(entry)
        res.save()
    res.data["threads_after_checks"] = thread_count()
    res.save()


def run_timing(job, device, calls, inst_cache):
    import statistics
    import torch
    plan = job.spec["timing"]
    res = job.results
    sets = plan["sets"]
    before = {str(i): input_hashes(job, inst_cache[i][1]) for i in sets}
    timing = {"device_ms": [], "host_ms": [], "sets_used": [], "threads_before": thread_count()}
    stage("warm-up")
    job.lock(exclusive=False)
    start = time.perf_counter()
    with torch.no_grad():
        k = 0
        while k < plan.get("warmup_runs", 3) or (time.perf_counter() - start) * 1e3 < plan.get("warmup_ms", 30):
            calls[sets[k % len(sets)]]()
            device.sync()
            k += 1
            if k > 1000:
                break
        stage("waiting for the device lock")
        job.lock(exclusive=True)
        stage("timed runs")
        start = time.perf_counter()
        outs = None
        k = 0
        while True:
            i = sets[k % len(sets)]
            if plan.get("flush", True):
                device.flush()
            outs, dms, hms = device.timed_call(calls[i])
            timing["device_ms"].append(dms)
            timing["host_ms"].append(hms)
            timing["sets_used"].append(i)
            timing["last_set"] = i
            k += 1
            elapsed = (time.perf_counter() - start) * 1e3
            if k >= plan.get("max_runs", 300):
                break
            if k >= plan.get("min_runs", 10):
                med = statistics.median(timing["device_ms"])
                cv = statistics.pstdev(timing["device_ms"]) / med if med > 0 else 0
                if elapsed >= plan.get("budget_ms", 2000) or cv <= plan.get("cv_target", 0.02):
                    break
    job.unlock()
    s = job.spec["sets"][timing["last_set"]]
    outs = list(outs)
    for t, d in zip(outs, s["outputs"]):
        write_tensor(job.folder, "out_timed_%s.bin" % d["name"], t)
    timing["threads_after"] = thread_count()
    timing["input_hashes_before"] = before
    timing["input_hashes_after"] = {str(i): input_hashes(job, inst_cache[i][1]) for i in sets}
    res.data["timing"] = timing
    res.save()


def run_job(folder):
    job = Job(folder)
    res = job.results
    spec = job.spec
    try:
        stage("start")
        if spec.get("interpret"):
            os.environ["TRITON_INTERPRET"] = "1"
        import torch
        device = Device(spec.get("device", "cpu"))
        res.data["fingerprint"] = device.fingerprint()
        res.data["llc_bytes"] = device.llc
        res.save()
        if spec["mode"] == "reference":
            job.lock(exclusive=False)
            run_reference(job, device)
            job.unlock()
        else:
            job.candidate = None
            if spec["mode"] == "candidate":
                stage("load")
                sys.path.insert(0, folder)
                default_precision = precision_state(torch)
                try:
                    job.candidate = load_module(os.path.join(folder, spec["candidate"]), "kforge_candidate")
                except WorkerError:
                    raise
                except BaseException as e:  # SyntaxError, ImportError, a failed inline build
                    tb = traceback.format_exc().splitlines()
                    raise WorkerError("load", "%s: %s\n%s" % (type(e).__name__, e, "\n".join(tb[-20:])))
            calls, inst_cache = {}, {}
            stage("prepare")
            needed = sorted(set(spec.get("checks", [])) | set((spec.get("timing") or {}).get("sets", [])))
            for i in needed:
                calls[i] = make_callable(job, device, spec["sets"][i], inst_cache)
            if spec["mode"] == "baseline":
                stage("compile" if spec["baseline"] == "compile" else "first run")
                t0 = time.perf_counter()
                with torch.no_grad():
                    for i in needed:
                        check_outputs(calls[i](), spec["sets"][i]["outputs"])
                device.sync()
                res.data["first_call_seconds"] = time.perf_counter() - t0
            if spec.get("checks"):
                job.lock(exclusive=False)
                run_checks(job, device, calls, inst_cache)
                job.unlock()
            if spec["mode"] == "candidate":
                now = precision_state(torch)
                res.data["precision"] = {"state": now, "default": default_precision}
                changed = [k for k in now if now[k] != default_precision.get(k)]
                if changed:
                    res.data["precision"]["fast_math_options"] = ["%s=%s" % (k, now[k]) for k in changed]
            if spec.get("timing"):
                run_timing(job, device, calls, inst_cache)
    except WorkerError as e:
        res.data["error"] = {"stage": e.stage, "message": str(e)}
    except Exception as e:  # the candidate's or the model's own exception
        tb = traceback.format_exc().splitlines()
        res.data["error"] = {"stage": "run", "message": "%s: %s\n%s" % (type(e).__name__, e, "\n".join(tb[-12:]))}
    stage("done")
    res.data["stage_seconds"] = STAGE_SECONDS
    res.data["done"] = True
    res.save()
    return 0


def probe():
    info = {"python": sys.version.split()[0], "executable": sys.executable}
    try:
        import torch
        info["torch"] = torch.__version__
        info["torch_compile"] = hasattr(torch, "compile")
        info["cuda"] = torch.version.cuda
        info["devices"] = ["cpu"]
        if torch.cuda.is_available():
            info["devices"] += ["cuda:%d %s" % (i, torch.cuda.get_device_name(i)) for i in range(torch.cuda.device_count())]
    except Exception as e:
        info["error"] = "PyTorch does not import: %s; run scripts/setup (Debian: python3-torch) or set KFORGE_PYTHON" % e
    try:
        import triton
        info["triton"] = triton.__version__
    except Exception as e:
        info["triton_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    print(json.dumps(info))
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "probe":
        return probe()
    if len(argv) == 3 and argv[1] == "run":
        return run_job(argv[2])
    print("usage: kforge_pyworker.py probe | run <folder>", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
