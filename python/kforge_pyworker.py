#!/usr/bin/env python3
"""kforge's Python worker: hosts PyTorch references, baselines and Python candidates.

The C++ orchestrator starts it in the same sandbox as kforge-worker and talks the protocol in
docs/python-worker.md: it writes job.json (and input files) into a private folder, runs
`python3 kforge_pyworker.py run <folder>` there, and reads result.json plus raw output files.
`probe` prints what this interpreter can do.

Two processes do a job. The supervisor (this process) never imports or runs candidate code: it
forks a child that builds the model, imports the candidate, runs checks and timed runs on
command over a socket pair, and sends back raw bytes and its own (untrusted) timers. The
supervisor keeps the trusted clock, draws the seeds of the fresh inputs of every timed run,
checks every timed output, writes every file and result.json, kills the child and, as its last
act, prints `kforge-result <SHA-256 of result.json>` on its stdout, which the child never holds.
The worker draws no verdicts: the orchestrator compares and judges.

This is the only Python in kforge; it needs PyTorch, and Triton for Triton candidates.
"""
import copy
import ctypes
import hashlib
import inspect
import json
import os
import re
import secrets
import signal
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
import traceback
import types

STDERR_TAG = "kforge-worker: "
MODEL_SEED = 42  # the seed KernelBench also uses for the model's parameters
NULL_RUNS = 20  # calibration runs of the command path before the candidate loads (at most)
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
CHUNK = 8 << 20  # bytes per socket read of a large blob (a multiple of every element size)
CHILD_OUTPUT_TAIL = 64 << 10  # bytes of the child's stdout/stderr kept and passed on
CHILD_OUTPUT_CAP = 64 << 20  # more than this from the child is a flood: it is killed
ELEMENT_SIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8}


class WorkerError(Exception):
    """A failure of the candidate (or the problem) at a named stage."""

    def __init__(self, stage_name, message):
        super().__init__(message)
        self.stage = stage_name


class ChildGone(Exception):
    """The child closed its end of the channel: it died, or the candidate closed the socket."""


# --- The channel: length-prefixed JSON messages, each followed by its raw blobs. --------------
#
# A message is a 4-byte big-endian length and that many bytes of UTF-8 JSON. When the JSON has
# "blobs": [n0, n1, ...], blobs of exactly those sizes follow, in order. The supervisor reads
# blobs in chunks (read_blob), so that no message from the child needs to fit in memory twice.

MAX_HEADER = 16 << 20


class Channel:
    def __init__(self, sock):
        self.sock = sock

    def send(self, obj, blobs=()):
        views = [memoryview(b).cast("B") for b in blobs]
        if views:
            obj = dict(obj, blobs=[len(v) for v in views])
        data = json.dumps(obj).encode()
        self.sock.sendall(struct.pack(">I", len(data)) + data)
        for v in views:
            self.sock.sendall(v)

    def recv(self):
        (n,) = struct.unpack(">I", self.read_exact(4))
        if n > MAX_HEADER:
            raise WorkerError("run", "the child broke the protocol: a message of %d bytes" % n)
        try:
            msg = json.loads(self.read_exact(n))
        except ValueError as e:
            raise WorkerError("run", "the child broke the protocol: %s" % e)
        if not isinstance(msg, dict):
            raise WorkerError("run", "the child broke the protocol: a message that is not an object")
        return msg

    def read_exact(self, n):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                raise ChildGone("end of channel")
            got += k
        return bytes(buf)

    def read_blob(self, n, sink):
        """Feeds the next n bytes to sink(memoryview) in chunks of CHUNK bytes (the last may
        be shorter)."""
        buf = bytearray(min(n, CHUNK))
        view = memoryview(buf)
        left = n
        while left > 0:
            want, got = min(left, CHUNK), 0
            while got < want:
                k = self.sock.recv_into(view[got:want], want - got)
                if k == 0:
                    raise ChildGone("end of channel")
                got += k
            sink(view[:want])
            left -= want


# --- Files in the job folder: written atomically, each with its SHA-256. ----------------------

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}$")


class FileSink:
    """Streams bytes into <folder>/<name> through a fresh temporary file (O_EXCL, random name,
    so nothing prepared in the folder can redirect the write); close() renames it into place and
    returns the SHA-256 of what was written."""

    def __init__(self, folder, name):
        if not SAFE_NAME.match(name) or name in ("result.json", "job.json"):
            raise WorkerError("run", "refusing to write a file named %r" % name)
        self.path = os.path.join(folder, name)
        fd, self.tmp = tempfile.mkstemp(dir=folder, prefix=".kf-")
        self.f = os.fdopen(fd, "wb")
        self.sha = hashlib.sha256()

    def __call__(self, chunk):
        self.sha.update(chunk)
        self.f.write(chunk)

    def close(self):
        self.f.close()
        os.replace(self.tmp, self.path)
        return self.sha.hexdigest()


class Results:
    """result.json, rewritten atomically after every step so that a crash keeps what was done;
    `files` lists the SHA-256 of every other file the supervisor wrote."""

    def __init__(self, folder):
        self.folder = folder
        self.data = {"files": {}}
        self.last = b""

    def save(self):
        self.last = json.dumps(self.data).encode()
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".kf-")
        with os.fdopen(fd, "wb") as f:
            f.write(self.last)
        os.replace(tmp, os.path.join(self.folder, "result.json"))

    def write(self, name, chunks):
        sink = FileSink(self.folder, name)
        for c in chunks:
            sink(c)
        self.data["files"][name] = sink.close()


# --- Tensors (child). ------------------------------------------------------------------------

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


def tensor_array(t):
    """t's bytes as a flat, contiguous host array (raw little-endian, row-major)."""
    import torch
    t = t.detach().contiguous().cpu().reshape(-1)
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.view(torch.int16)
    return t.numpy()


def tensor_hash(t):
    return hashlib.blake2b(tensor_array(t).tobytes(), digest_size=8).hexdigest()


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


# --- Loading problems and candidates (child). -------------------------------------------------

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


def fresh_args(module, seed, device):
    """A timed run's inputs: torch.manual_seed(seed) and the module's get_inputs(), generated on
    the device itself where PyTorch can (2.0 and newer: factories under `with torch.device`), so
    that a reference job on the same device regenerates exactly these values."""
    import torch
    torch.manual_seed(seed)
    ctx = torch.device(device)
    if device != "cpu" and hasattr(ctx, "__enter__"):
        with ctx:
            return list(module.get_inputs())
    return list(module.get_inputs())


class Instance:
    """One KernelBench problem at one size assignment and seed: model, inputs, names. Check
    trials generate their inputs on the CPU (the reference reports their hashes); `fresh` ones,
    for timed runs, on the device (fresh_args)."""

    def __init__(self, module, seed, magnitude, device, model=None, fresh=False):
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
        if fresh:
            args = fresh_args(module, seed, device)
        else:
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
        if model is None:
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


class RunInputs:
    """What one call of an implementation reads: positional arguments (KernelBench), named
    tensors (kf_run, and the mutation checks: inputs and parameters, not buffers), attributes,
    and the seed set before the call."""

    def __init__(self, args, named, attrs, seed, inst=None):
        self.args, self.named, self.attrs, self.seed, self.inst = args, named, attrs, seed, inst


def as_outputs(result):
    import torch
    if isinstance(result, torch.Tensor):
        return [("out", result)]
    if isinstance(result, (tuple, list)) and all(isinstance(r, torch.Tensor) for r in result):
        return [("out%d" % i, r) for i, r in enumerate(result)]
    raise WorkerError("run", "forward returned %s; kforge compares tensors or tuples of tensors"
                      % type(result).__name__)


def check_outputs(outs, expected):
    """Outputs must have the shapes and dtypes the reference has."""
    if len(outs) != len(expected):
        raise WorkerError("check", "returned %d outputs; the reference returns %d" % (len(outs), len(expected)))
    for t, d in zip(outs, expected):
        if list(t.shape) != list(d["dims"]) or dtype_name(t.dtype) != d["dtype"]:
            raise WorkerError("check", "output '%s' is %s %s; the reference's is %s %s" % (
                d["name"], dtype_name(t.dtype), list(t.shape), d["dtype"], d["dims"]))


# --- The device: synchronisation, timers, cache flush (child). --------------------------------

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
        """Runs fn once between device timers; returns (output, device_ms, host_ms). Both are the
        child's own clocks: the supervisor's wall clock is the trusted one."""
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


def thread_count(pid="self"):
    try:
        for line in open("/proc/%s/status" % pid):
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


# --- The child: everything candidate-related, on the supervisor's command. --------------------
#
# Each cmd_<name> handler takes the command and returns (reply, blobs). It runs with the
# candidate's code in the same interpreter once `load` has run, so nothing it reports is
# trusted: the supervisor checks what it can from the bytes it receives and times it itself.

class Child:
    def __init__(self, spec, folder, chan):
        self.spec, self.folder, self.chan = spec, folder, chan
        self.modules, self.models, self.models64, self.new_models = {}, {}, {}, {}
        self.hashes, self.copies = {}, {}
        self.sets = {}          # set index -> RunInputs of its check trial
        self.candidate = None
        self.entry = None       # kf_run entry, or None for models (ModelNew, baselines)
        self.set_models = {}    # set index -> the model that runs it
        self.set_outs = {}      # set index -> kf_run output buffers [(name, dtype, view, guard)]
        self.null_outs = {}     # set index -> outputs of the null op (calibration)
        self.pending = None     # the prepared timed run: (set, RunInputs or None, fn, clones)
        self.last = None        # its outputs, after go
        self.timed_changed = {}  # set index -> names of fresh inputs a timed run changed

    def serve(self):
        while True:
            msg = self.chan.recv()
            blobs = ()
            try:
                reply, blobs = getattr(self, "cmd_" + msg["cmd"])(msg)
            except WorkerError as e:
                reply = {"error": {"stage": e.stage, "message": str(e)}}
            except BaseException as e:  # the candidate's or the model's own exception, SystemExit too
                tb = traceback.format_exc().splitlines()
                reply = {"error": {"stage": "run", "message": "%s: %s\n%s" % (type(e).__name__, e, "\n".join(tb[-12:]))}}
            self.chan.send(reply, blobs)

    # Problem state.
    def module(self, overrides):
        key = json.dumps(overrides, sort_keys=True)
        if key not in self.modules:
            problem = self.spec["problem"]
            self.modules[key] = load_module(os.path.join(self.folder, problem["module"]),
                                            "kforge_problem_%d" % len(self.modules), overrides)
        return self.modules[key]

    def instance(self, s, seed=None, fresh=False):
        key = json.dumps(s.get("overrides", {}), sort_keys=True)
        inst = Instance(self.module(s.get("overrides", {})), s["seed"] if seed is None else seed,
                        s.get("magnitude", 1.0), self.device.spec, self.models.get(key), fresh or s.get("fresh", False))
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

    def input_states(self, named):
        """Per input "same", or "changed" when it differs from the copy taken before the first run."""
        return ["same" if same_bits(t, self.pristine(t)) else "changed" for t in named.values()]

    def cmd_init(self, msg):
        if self.spec.get("interpret"):
            os.environ["TRITON_INTERPRET"] = "1"
        import torch
        self.torch = torch
        self.device = Device(self.spec.get("device", "cpu"))
        self.tiny = torch.zeros(1, device=self.device.spec)
        return {"fingerprint": self.device.fingerprint(), "llc_bytes": self.device.llc}, ()

    def cmd_reference(self, msg):
        """Describes set i (inputs, parameters, outputs) and computes its reference output in
        float64 where the model's operations allow, else in the problem's own precision."""
        torch = self.torch
        i = msg["set"]
        s = self.spec["sets"][i]
        inst = self.instance(s)
        desc = {"set": i, "outputs": [], "inputs": []}
        files, blobs = [], []
        if not s.get("fresh"):
            constants = module_constants(open(inst.module.__file__).read())
            constants.update(s.get("overrides", {}))
            desc.update({"constants": constants, "init_inputs": [repr(v) for v in inst.init_inputs],
                         "scalars": [{"name": n, "value": a} for n, a in zip(inst.arg_names, inst.args)
                                     if not isinstance(a, torch.Tensor)]})
            for name, kind, t in inst.tensor_inputs():
                d = {"name": name, "kind": kind, "dtype": dtype_name(t.dtype), "dims": list(t.shape),
                     "hash": self.hash(t)}
                if self.spec.get("write_inputs", False):
                    d["file"] = "in_%d_%s.bin" % (i, name)
                    files.append(d["file"])
                    blobs.append(tensor_array(t))
                desc["inputs"].append(d)
        with torch.no_grad():
            torch.manual_seed(inst.seed)
            state = copy.deepcopy(inst.model.state_dict())
            native = as_outputs(inst.model(*inst.args))
            if not s.get("fresh"):
                flops = count_flops(inst)
                if flops is not None:
                    desc["flops"] = flops
            inst.model.load_state_dict(state)  # undo running-statistics updates
            precision, ref = self.float64_outputs(inst, state, native)
        for (name, t), (_, r) in zip(native, ref):
            f = "ref_%d_%s.bin" % (i, name)
            files.append(f)
            blobs.append(tensor_array(r.double() if r.is_floating_point() else r))
            desc["outputs"].append({"name": name, "dtype": dtype_name(t.dtype), "dims": list(t.shape),
                                    "file": f, "reference_dtype": "float64" if r.is_floating_point() else dtype_name(r.dtype)})
        desc["reference_precision"] = precision
        self.device.sync()
        return {"desc": desc, "files": files}, blobs

    def float64_outputs(self, inst, state, native):
        torch = self.torch
        try:
            key = id(inst.model)
            if key not in self.models64:
                self.models64 = {key: copy.deepcopy(inst.model).double()}  # one at a time
            model64 = self.models64[key]
            model64.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in state.items()})
            args64 = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                      for a in inst.args]
            torch.manual_seed(inst.seed)
            return "float64", as_outputs(model64(*args64))
        except Exception as e:  # an operation without a float64 kernel on this device
            return "native (float64 failed: %s)" % str(e).splitlines()[0][:200], native

    def cmd_setup(self, msg):
        """Builds the problem's models and the check trials' inputs of the given sets, before the
        candidate is loaded."""
        for i in msg["sets"]:
            s = self.spec["sets"][i]
            if self.spec["problem"]["kind"] != "kernelbench":
                named = {d["name"]: read_tensor(self.folder, d, self.device.spec) for d in s["inputs"]}
                attrs = {a["name"]: (a["i"] if a.get("integer", False) else a["f"]) for a in s.get("attrs", [])}
                self.sets[i] = RunInputs(list(named.values()), named, attrs, s.get("seed", 0))
                continue
            inst = self.instance(s)
            hashes = s.get("input_hashes")
            if hashes:
                got = {n: self.hash(t) for n, _, t in inst.tensor_inputs()}
                if got != hashes:
                    raise WorkerError("inputs", "regenerated inputs differ from the reference's (the problem's "
                                      "get_inputs is not deterministic under a fixed seed)")
            # Running statistics (buffers) may legitimately change; inputs and parameters may not.
            named = {n: t for n, k, t in inst.tensor_inputs() if k != "buffer"}
            self.sets[i] = RunInputs(inst.args, named, {}, inst.seed, inst)
        return {}, ()

    def cmd_load(self, msg):
        sys.path.insert(0, self.folder)
        default = precision_state(self.torch)
        try:
            self.candidate = load_module(os.path.join(self.folder, self.spec["candidate"]), "kforge_candidate")
        except WorkerError:
            raise
        except BaseException as e:  # SyntaxError, ImportError, a failed inline build
            tb = traceback.format_exc().splitlines()
            raise WorkerError("load", "%s: %s\n%s" % (type(e).__name__, e, "\n".join(tb[-20:])))
        return {"precision_default": default}, ()

    def cmd_build(self, msg):
        """The implementation of every set: the problem's model (baselines, compiled for
        `compile`), one ModelNew per reference model, or kf_run with guarded output buffers."""
        torch = self.torch
        spec = self.spec
        reply = {}
        compiled = {}
        for i, inp in self.sets.items():
            if spec["mode"] == "baseline":
                model = inp.inst.model
                if spec["baseline"] == "compile":
                    if not hasattr(torch, "compile"):
                        raise WorkerError("compile", "torch %s has no torch.compile (PyTorch 2.0 or newer has it)" % torch.__version__)
                    compiled.setdefault(id(model), torch.compile(model))
                    model = compiled[id(model)]
                self.set_models[i] = model
            elif spec["entry"] == "ModelNew":
                if inp.inst is None:
                    raise WorkerError("load", "a ModelNew candidate needs a PyTorch problem (KernelBench format); "
                                      "for a kforge problem write kf_run(inputs, outputs, attrs)")
                key = id(inp.inst.model)  # one ModelNew per reference model (sets with the same constants)
                if key not in self.new_models:
                    torch.manual_seed(MODEL_SEED)
                    model = self.candidate.ModelNew(*inp.inst.init_inputs)
                    reply["parameters"] = copy_parameters(inp.inst.model, model)
                    self.new_models[key] = model.to(self.device.spec)
                self.set_models[i] = self.new_models[key]
            else:
                self.entry = getattr(self.candidate, spec["entry"], None)
                if self.entry is None:
                    raise WorkerError("load", "the candidate defines no '%s'; a Triton candidate defines "
                                      "kf_run(inputs, outputs, attrs) (docs/abi-triton.md)" % spec["entry"])
                self.set_outs[i] = self.output_buffers(spec["sets"][i]["outputs"], GUARD_ELEMENTS)
        return reply, ()

    def output_buffers(self, descs, guard):
        dtypes = torch_dtypes()
        outs = []
        for d in descs:
            n = 1
            for x in d["dims"]:
                n *= x
            flat = self.torch.zeros(n + guard, dtype=dtypes[d["dtype"]], device=self.device.spec)
            outs.append((d["name"], d["dtype"], flat[:n].view(d["dims"]), flat[n:]))
        return outs

    def function(self, i, inp):
        """fn() runs set i's implementation once on inp and returns the list of output tensors;
        the seed is set inside, so that it is part of the timed call."""
        torch = self.torch
        seed = inp.seed
        if self.entry is None:
            model, args = self.set_models[i], inp.args

            def call():
                torch.manual_seed(seed)
                return [t for _, t in as_outputs(model(*args))]
            return call
        outs, entry, named, attrs = self.set_outs[i], self.entry, inp.named, inp.attrs
        outputs = {name: t for name, _, t, _ in outs}

        def call():
            torch.manual_seed(seed)
            entry(named, outputs, attrs)
            return [t for _, _, t, _ in outs]
        return call

    def poison(self, i, which):
        for _, dt, t, guard in self.set_outs.get(i, ()):
            poison_fill(t, dt, which)
            poison_fill(guard, dt, which)

    def overrun(self, i, which):
        for name, dt, _, guard in self.set_outs.get(i, ()):
            ref = self.torch.empty_like(guard)
            poison_fill(ref, dt, which)
            if not same_bits(guard, ref):
                return "wrote past the end of output '%s'" % name
        return None

    def cmd_first_run(self, msg):
        with self.torch.no_grad():
            for i, inp in self.sets.items():
                check_outputs(self.function(i, inp)(), self.spec["sets"][i]["outputs"])
        self.device.sync()
        return {}, ()

    def cmd_check(self, msg):
        """One check run of set i with poison `which` (kf_run outputs): outputs as blobs."""
        i, which = msg["set"], msg["which"]
        inp = self.sets[i]
        reply = {}
        if msg.get("before"):
            reply["input_hashes_before"] = self.input_states(inp.named)
        self.poison(i, which)
        self.device.sync()
        with self.torch.no_grad():
            outs, ms, _ = self.device.timed_call(self.function(i, inp))
        check_outputs(outs, self.spec["sets"][i]["outputs"])
        reply["overrun"] = self.overrun(i, which)
        reply["ms"] = ms
        if msg.get("after"):
            reply["input_hashes_after"] = self.input_states(inp.named)
        arrays = [tensor_array(t) for t in outs]
        reply["outputs"] = [{"name": d["name"], "nbytes": a.nbytes} for d, a in zip(self.spec["sets"][i]["outputs"], arrays)]
        return reply, arrays

    def cmd_precision(self, msg):
        return {"state": precision_state(self.torch)}, ()

    def cmd_input_states(self, msg):
        return {"states": {str(i): self.input_states(self.sets[i].named) for i in msg["sets"]}}, ()

    def cmd_warmup(self, msg):
        sets, k, start = msg["sets"], 0, time.perf_counter()
        with self.torch.no_grad():
            while k < msg["runs"] or (time.perf_counter() - start) * 1e3 < msg["ms"]:
                i = sets[k % len(sets)]
                self.function(i, self.sets[i])()
                self.device.sync()
                k += 1
                if k > 1000:
                    break
        return {"runs": k}, ()

    def cmd_prepare(self, msg):
        """Sets up one timed run of set j: fresh inputs from the seed (KernelBench problems; the
        set's own inputs for kforge problems), poisoned kf_run outputs, a flushed cache. A null
        run (calibration) prepares the same way and then runs a trivial op."""
        j, seed, null = msg["set"], msg["seed"], msg.get("null", False)
        s = self.spec["sets"][j]
        inp, clones = self.sets[j], []
        if seed is not None:
            inst = self.instance(s, seed=seed, fresh=True)
            named = {n: t for n, k, t in inst.tensor_inputs() if k != "buffer"}
            inp = RunInputs(inst.args, named, {}, seed, inst)
            clones = [(n, t, t.detach().clone()) for n, k, t in inst.tensor_inputs() if k == "input"]
        if null:
            if j not in self.null_outs:
                self.null_outs[j] = self.output_buffers(s["outputs"], GUARD_ELEMENTS if self.spec.get("entry") == "kf_run" else 0)
            outs = self.null_outs[j]
            for _, dt, t, guard in outs if self.spec.get("entry") == "kf_run" else ():
                poison_fill(t, dt, 0)
                poison_fill(guard, dt, 0)
            fn = self.null_function(inp.seed, [t for _, _, t, _ in outs])
        else:
            self.poison(j, 0)
            fn = self.function(j, inp)
        if self.spec["timing"].get("flush", True):
            self.device.flush()
        self.device.sync()
        self.pending = (j, null, fn, clones)
        return {}, ()

    def null_function(self, seed, outs):
        torch, tiny = self.torch, self.tiny

        def call():
            torch.manual_seed(seed)
            tiny.add_(1.0)
            return outs
        return call

    def cmd_go(self, msg):
        j, null, fn, clones = self.pending
        with self.torch.no_grad():
            outs, dms, hms = self.device.timed_call(fn)
        self.last = outs
        return {"device_ms": dms, "host_ms": hms}, ()

    def cmd_collect(self, msg):
        """The outputs of the run just done, as blobs, plus what the child saw: writes past the
        end of kf_run outputs, fresh inputs the call changed."""
        j, null, fn, clones = self.pending
        outs, expected = list(self.last), self.spec["sets"][j]["outputs"]
        check_outputs(outs, expected)
        reply = {"overrun": None if null else self.overrun(j, 0),
                 "inputs_changed": [n for n, t, c in clones if not same_bits(t, c)]}
        self.timed_changed.setdefault(j, set()).update(reply["inputs_changed"])
        self.pending = self.last = None
        arrays = [tensor_array(t) for t in outs]
        reply["outputs"] = [{"name": d["name"], "nbytes": a.nbytes} for d, a in zip(expected, arrays)]
        return reply, arrays

    def cmd_timing_end(self, msg):
        """Input states of the timed sets after the timed runs: parameters against their copies,
        fresh inputs as the runs found them."""
        states = {}
        for j in msg["sets"]:
            named = self.sets[j].named
            changed = self.timed_changed.get(j, set())
            states[str(j)] = ["changed" if n in changed or not same_bits(t, self.pristine(t)) else "same"
                              for n, t in named.items()]
        return {"states": states}, ()


def same_bits(a, b):
    """Exact comparison of bit patterns (NaN inputs compare equal to themselves)."""
    import torch

    def bits(t):
        width = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[t.element_size()]
        return t.view(width) if t.is_floating_point() else t
    return torch.equal(bits(a), bits(b))


def copy_parameters(reference, candidate):
    """Gives ModelNew the reference's parameters when their names and shapes match (KernelBench
    relies on equal seeds instead); says whether it did."""
    ref, cand = reference.state_dict(), candidate.state_dict()
    if set(ref) == set(cand) and all(ref[k].shape == cand[k].shape for k in ref):
        candidate.load_state_dict(ref)
        return "copied from the reference (%d tensors)" % len(ref)
    return ("not copied: ModelNew's state (%s) differs from Model's (%s); both were initialised with seed %d" %
            (", ".join(sorted(cand)) or "empty", ", ".join(sorted(ref)) or "empty", MODEL_SEED))


def child_main(spec, folder, sock, out_fd, supervisor):
    """The child's whole life: its own process group, killed with the supervisor, stdout and
    stderr on the supervisor's pipe (no copy of the supervisor's own), the channel on fd 3 and no
    other descriptor; then it serves commands until it is killed."""
    try:
        os.setpgid(0, 0)
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != supervisor:
            os._exit(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        fd = sock.detach()
        if fd != 3:
            os.dup2(fd, 3)  # the old descriptor goes with the rest
        os.closerange(4, os.sysconf("SC_OPEN_MAX"))
        chan = Channel(socket.socket(fileno=3))
        Child(spec, folder, chan).serve()
    except ChildGone:
        pass
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(0)


# --- The supervisor. -------------------------------------------------------------------------

class OutputProbe:
    """What the supervisor learns from one output's bytes as they arrive: their SHA-256, how many
    elements are NaN/Inf and how many still hold the poison pattern; keeps them when asked."""

    def __init__(self, dtype, poison_bits, keep):
        import numpy
        self.np = numpy
        self.dtype, self.keep = dtype, keep
        self.sha = hashlib.sha256()
        self.nonfinite = self.poisoned = 0
        self.chunks = []
        width = ELEMENT_SIZE[dtype]
        self.view = {2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}[width]
        self.exp = {"float32": 0x7f800000, "float64": 0x7ff0000000000000, "float16": 0x7c00,
                    "bfloat16": 0x7f80}.get(dtype)
        self.poison = None if poison_bits is None else poison_bits & ((1 << (8 * width)) - 1)

    def __call__(self, chunk):
        self.sha.update(chunk)
        if self.keep:
            self.chunks.append(bytes(chunk))
        if self.exp is None and self.poison is None:
            return
        a = self.np.frombuffer(chunk, dtype=self.view)
        if self.exp is not None:
            self.nonfinite += int(self.np.count_nonzero((a & self.view(self.exp)) == self.view(self.exp)))
        if self.poison is not None:
            self.poisoned += int(self.np.count_nonzero(a == self.view(self.poison)))

    def digest(self):
        return self.sha.hexdigest()


class Supervisor:
    def __init__(self, folder):
        self.folder = folder
        with open(os.path.join(folder, "job.json")) as f:
            self.spec = json.load(f)
        self.res = Results(folder)
        self.started = time.perf_counter()
        self.stage_seconds = {}
        self.current = ("start", self.started)
        self.lock_handle = None
        self.samples = []   # reservoir of timed runs whose outputs become files, kept until the end
        self.output_tail = bytearray()
        self.output_total = 0
        self.flooded = False

    # Progress lines on the supervisor's stderr: the orchestrator reads the last one.
    def stage(self, name):
        now = time.perf_counter()
        key = self.current[0]
        self.stage_seconds[key] = self.stage_seconds.get(key, 0.0) + now - self.current[1]
        self.current = (name.split(" set ")[0], now)
        self.stage_name = name
        print(STDERR_TAG + name, file=sys.stderr, flush=True)

    def lock(self, exclusive):
        """The device lock (docs/python-worker.md): shared while the job computes references and
        checks, exclusive while it calibrates and times, so that nothing else runs on the device
        during timed runs. Long CPU-bound phases (imports, torch.compile, inline builds) hold no
        lock. Opened after the fork: the child has no descriptor that could release it."""
        path = self.spec.get("lock_file")
        if not path:
            return
        import fcntl
        if self.lock_handle is None:
            self.lock_handle = open(path, "a")
        fcntl.flock(self.lock_handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)

    def unlock(self):
        if self.lock_handle is not None:
            import fcntl
            fcntl.flock(self.lock_handle, fcntl.LOCK_UN)

    # The child.
    def start_child(self):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:  # no ptrace, no /proc/<pid>/mem or fd/*
            raise WorkerError("worker", "prctl(PR_SET_DUMPABLE, 0) failed: errno %d" % ctypes.get_errno())
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_r, out_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            ours.close()
            os.close(out_r)
            child_main(self.spec, self.folder, theirs, out_w, me)
        theirs.close()
        os.close(out_w)
        self.pid = pid
        try:
            os.setpgid(pid, pid)  # also done by the child; whichever runs first
        except OSError:
            pass
        self.chan = Channel(ours)
        self.drain = threading.Thread(target=self.drain_output, args=(out_r,), daemon=True)
        self.drain.start()

    def drain_output(self, fd):
        """Keeps the tail of the child's stdout and stderr; a flood kills the child."""
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except OSError:
                return
            if not data:
                return
            self.output_total += len(data)
            self.output_tail += data
            if len(self.output_tail) > 2 * CHILD_OUTPUT_TAIL:
                del self.output_tail[:-CHILD_OUTPUT_TAIL]
            if self.output_total > CHILD_OUTPUT_CAP and not self.flooded:
                self.flooded = True
                self.kill_child()

    def child_output(self, limit=CHILD_OUTPUT_TAIL):
        """The tail of what the child printed, with its progress-line tags defused: only the
        supervisor reports stages."""
        text = bytes(self.output_tail[-limit:]).decode("utf-8", "replace")
        return text.replace(STDERR_TAG.strip(), "kforge-child")

    def kill_child(self):
        for kill in (lambda: os.killpg(self.pid, signal.SIGKILL), lambda: os.kill(self.pid, signal.SIGKILL)):
            try:
                kill()
            except OSError:
                pass

    def end_child(self):
        if not hasattr(self, "pid"):
            return None
        self.kill_child()
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            status = None
        self.drain.join(timeout=2)  # a descendant that left the group may hold the pipe open
        return status

    def how_child_ended(self):
        """After the channel closed: how the child ended, waiting up to 2 s for it to exit."""
        deadline = time.time() + 2
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                self.kill_child()
                return "closed the channel to the worker"
            time.sleep(0.01)
        self.pid_status = status
        if self.flooded:
            return "flooded its output (more than %d MiB)" % (CHILD_OUTPUT_CAP >> 20)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = "signal %d" % sig
            return "was killed by signal %d (%s)" % (sig, name)
        return "exited with status %d" % os.WEXITSTATUS(status)

    def call(self, cmd):
        """Sends a command and returns the child's reply (its blobs still to be read)."""
        self.chan.send(cmd)
        return self.reply()

    def reply(self):
        r = self.chan.recv()
        if "error" in r:
            raise WorkerError(r["error"].get("stage", "run"), r["error"].get("message", ""))
        return r

    def receive_files(self, names, sizes):
        if len(names) != len(sizes):
            raise WorkerError("run", "the child sent %d blobs for %d files" % (len(sizes), len(names)))
        for name, n in zip(names, sizes):
            sink = FileSink(self.folder, name)
            self.chan.read_blob(n, sink)
            self.res.data["files"][name] = sink.close()

    def threads(self):
        return thread_count(self.pid)

    # The job.
    def run(self):
        spec, res = self.spec, self.res
        try:
            self.stage("start")
            self.start_child()
            init = self.call({"cmd": "init"})
            res.data["fingerprint"] = init["fingerprint"]
            res.data["llc_bytes"] = init["llc_bytes"]
            res.save()
            if spec["mode"] == "reference":
                self.run_reference()
            else:
                self.run_implementation()
        except WorkerError as e:
            res.data["error"] = {"stage": e.stage, "message": str(e)}
        except ChildGone:
            how = self.how_child_ended()
            res.data["error"] = {"stage": "run", "message": "the worker's child process (the candidate's) %s during %s\n%s"
                                 % (how, getattr(self, "stage_name", "start"), self.child_output(2000))}
        except Exception as e:  # a fault of the worker itself
            tb = traceback.format_exc().splitlines()
            res.data["error"] = {"stage": "worker", "message": "%s: %s\n%s" % (type(e).__name__, e, "\n".join(tb[-12:]))}
        self.finish()
        return 0

    def finish(self):
        """Kills the child, writes what was kept back until now (the sampled timed outputs: the
        child must not learn which runs were sampled), the final result.json and its hash."""
        self.unlock()
        self.end_child()
        res = self.res
        if self.samples and "timing" in res.data:
            res.data["timing"]["samples"] = []
            for run in self.samples:
                files = {}
                for name, probe in run["probes"]:
                    files[name] = "timed_%d_%s.bin" % (run["run"], name)
                    res.write(files[name], probe.chunks)
                res.data["timing"]["samples"].append({"run": run["run"], "seed": run["seed"], "set": run["set"],
                                                      "magnitude": run["magnitude"], "files": files})
        tail = self.child_output()
        if tail.strip():
            sys.stderr.write("--- the child's output (last %d bytes) ---\n%s\n" % (len(tail), tail))
        self.stage("done")
        res.data["stage_seconds"] = self.stage_seconds
        res.data["done"] = True
        res.save()
        sys.stdout.write("kforge-result %s\n" % hashlib.sha256(res.last).hexdigest())
        sys.stdout.flush()

    def run_reference(self):
        res = self.res
        res.data["sets"] = []
        self.lock(exclusive=False)
        for i in range(len(self.spec["sets"])):
            self.stage("reference set %d" % i)
            r = self.call({"cmd": "reference", "set": i})
            self.receive_files(r.get("files", []), r.get("blobs", []))
            res.data["sets"].append(r["desc"])
            res.save()
        self.unlock()

    def run_implementation(self):
        spec, res = self.spec, self.res
        timing = spec.get("timing")
        needed = sorted(set(spec.get("checks", [])) | set((timing or {}).get("sets", [])))
        self.stage("prepare")
        self.call({"cmd": "setup", "sets": needed})
        if timing:
            self.calibrate(timing["sets"])
        if spec["mode"] == "candidate":
            self.stage("load")
            default_precision = self.call({"cmd": "load"})["precision_default"]
        self.stage("build")
        built = self.call({"cmd": "build"})
        if "parameters" in built:
            res.data["parameters"] = built["parameters"]
        if spec["mode"] == "baseline":
            self.stage("compile" if spec["baseline"] == "compile" else "first run")
            t0 = time.perf_counter()
            self.call({"cmd": "first_run"})
            res.data["first_call_seconds"] = time.perf_counter() - t0
        if spec.get("checks"):
            self.lock(exclusive=False)
            self.run_checks()
            self.unlock()
        if spec["mode"] == "candidate":
            now = self.call({"cmd": "precision"})["state"]
            res.data["precision"] = {"state": now, "default": default_precision}
            changed = [k for k in now if now[k] != default_precision.get(k)]
            if changed:
                res.data["precision"]["fast_math_options"] = ["%s=%s" % (k, now[k]) for k in changed]
        if timing:
            self.run_timing()
        res.save()

    def run_checks(self):
        res = self.res
        res.data["checks"] = []
        self.check_digests = {}  # output name -> {digest: "check run <set><letter>"}
        self.checked = {}  # (set, output name) -> digests of its check runs
        twice = self.spec.get("check_twice", True)
        for n, i in enumerate(self.spec.get("checks", [])):
            entry = {"set": i}
            runs = ((0, "a"), (1, "b")) if twice else ((0, "a"),)
            for which, letter in runs:
                self.stage("check set %d run %s" % (i, letter))
                r = self.call({"cmd": "check", "set": i, "which": which, "before": letter == "a",
                               "after": letter == runs[-1][1]})
                expected = self.spec["sets"][i]["outputs"]
                self.expect_outputs(r, expected)
                for d, n_bytes in zip(expected, r["blobs"]):
                    name = "out_%d_%s_%s.bin" % (i, letter, d["name"])
                    sink = FileSink(self.folder, name)
                    self.chan.read_blob(n_bytes, sink)
                    digest = res.data["files"][name] = sink.close()
                    self.check_digests.setdefault(d["name"], {}).setdefault(digest, "check run %d%s" % (i, letter))
                    self.checked.setdefault((i, d["name"]), set()).add(digest)
                if r.get("overrun"):
                    entry["overrun"] = r["overrun"]
                entry["ms_" + letter] = r["ms"]
                for k in ("input_hashes_before", "input_hashes_after"):
                    if k in r:
                        entry[k] = r[k]
                if n == 0 and letter == "a":
                    res.data["threads_after_first_run"] = self.threads()
            res.data["checks"].append(entry)
            res.save()
        res.data["threads_after_checks"] = self.threads()
        res.save()

    def expect_outputs(self, r, expected):
        """The child's outputs must be the expected ones, byte for byte in size (a trusted check
        of what the child's own shape check said)."""
        got = r.get("outputs", [])
        sizes = r.get("blobs", [])
        if len(got) != len(expected) or len(sizes) != len(expected):
            raise WorkerError("check", "returned %d outputs; the reference returns %d" % (len(got), len(expected)))
        for g, d, n in zip(got, expected, sizes):
            want = ELEMENT_SIZE[d["dtype"]]
            for x in d["dims"]:
                want *= x
            if g.get("name") != d["name"] or n != want or g.get("nbytes") != n:
                raise WorkerError("check", "output '%s' arrived as %d bytes; the reference's %s %s has %d" % (
                    d["name"], n, d["dtype"], d["dims"], want))

    # Timing.
    def one_run(self, j, seed, null, keep=False):
        """prepare, go, collect: one run of set j. The supervisor's clock measures each step;
        wall_ms is from sending go to receiving done."""
        ns = time.perf_counter_ns
        t0 = ns()
        self.call({"cmd": "prepare", "set": j, "seed": seed, "null": null})
        t1 = ns()
        self.chan.send({"cmd": "go"})
        done = self.reply()
        t2 = ns()
        t3 = ns()
        r = self.call({"cmd": "collect"})
        expected = self.spec["sets"][j]["outputs"]
        self.expect_outputs(r, expected)
        kf_run = self.spec.get("entry") == "kf_run" and self.spec["mode"] == "candidate"
        probes = []
        for d, n in zip(expected, r["blobs"]):
            probe = OutputProbe(d["dtype"], POISON[d["dtype"]][0] if kf_run else None, keep)
            self.chan.read_blob(n, probe)
            probes.append((d["name"], probe))
        t4 = ns()
        return {"set": j, "seed": seed, "wall_ms": (t2 - t1) / 1e6, "prepare_ms": (t1 - t0) / 1e6,
                "collect_ms": (t4 - t3) / 1e6, "device_ms": float(done["device_ms"]),
                "host_ms": float(done["host_ms"]), "probes": probes, "overrun": r.get("overrun"),
                "inputs_changed": r.get("inputs_changed", [])}

    def fresh(self):
        return self.spec["problem"]["kind"] == "kernelbench"

    def calibrate(self, sets):
        """Null runs through the same command path before the candidate is loaded, under the
        exclusive lock: the round trip the wall clock adds (overhead_ms) and what preparing and
        collecting a run of these sizes costs when nothing moved work there."""
        self.stage("calibrate")
        self.lock(exclusive=True)
        n = min(NULL_RUNS, max(6, 2 * int(self.spec["timing"].get("min_runs", 10))))  # as precise as the timing
        runs = [self.one_run(sets[k % len(sets)], secrets.randbits(63) if self.fresh() else None, True)
                for k in range(n)]
        self.unlock()
        med = statistics.median
        self.calibration = {"null_runs": len(runs),
                            "overhead_ms": med([r["wall_ms"] - r["device_ms"] for r in runs]),
                            "wall_ms": med([r["wall_ms"] for r in runs]),
                            "device_ms": med([r["device_ms"] for r in runs]),
                            "prepare_ms": med([r["prepare_ms"] for r in runs]),
                            "collect_ms": med([r["collect_ms"] for r in runs])}

    def run_timing(self):
        spec, res = self.spec, self.res
        plan = spec["timing"]
        sets = plan["sets"]
        timing = {"overhead_ms": self.calibration["overhead_ms"], "calibration": self.calibration,
                  "fresh_inputs": self.fresh(), "device_ms": [], "host_ms": [], "wall_ms": [],
                  "prepare_ms": [], "collect_ms": [], "sets_used": [], "seeds": [], "magnitudes": [],
                  "issues": [], "threads_before": self.threads()}
        if not self.fresh():
            timing["note"] = ("kforge problem: timed runs rotate over the check trials' inputs (the job carries "
                              "no input distributions to draw fresh ones from); each timed output is compared "
                              "with its set's checked output instead")
        self.stage("warm-up")
        self.lock(exclusive=False)
        self.call({"cmd": "warmup", "sets": sets, "runs": plan.get("warmup_runs", 3), "ms": plan.get("warmup_ms", 30)})
        self.stage("waiting for the device lock")
        self.lock(exclusive=True)
        self.stage("timed runs")
        before = self.call({"cmd": "input_states", "sets": sets})["states"]
        self.timed_loop(plan, timing)
        self.unlock()
        after = self.call({"cmd": "timing_end", "sets": sets})["states"]
        timing["threads_after"] = self.threads()
        timing["input_hashes_before"] = before
        timing["input_hashes_after"] = after
        res.data["timing"] = timing
        res.save()

    def timed_loop(self, plan, timing):
        sets, k_keep = plan["sets"], int(self.spec.get("timed_checks", 3))
        overhead = self.calibration["overhead_ms"]
        seen = {}  # output name -> {digest: "timed run N"} (the check runs' too)
        for name, digests in getattr(self, "check_digests", {}).items():
            seen[name] = dict(digests) if self.fresh() else {}
        start = time.perf_counter()
        effective = []
        k = 0
        while True:
            j = sets[k % len(sets)]
            seed = secrets.randbits(63) if self.fresh() else None
            slot = k if k < k_keep else secrets.randbelow(k + 1)  # reservoir sampling (algorithm R)
            run = self.one_run(j, seed, False, keep=slot < k_keep)
            for key in ("device_ms", "host_ms", "wall_ms", "prepare_ms", "collect_ms"):
                timing[key].append(run[key])
            timing["sets_used"].append(j)
            timing["seeds"].append(seed)
            timing["magnitudes"].append(self.spec["sets"][j].get("magnitude", 1.0))
            self.check_timed_outputs(k, run, seen, timing["issues"])
            if slot < k_keep:
                run.update(run=k, magnitude=timing["magnitudes"][-1])
                if len(self.samples) < k_keep:
                    self.samples.append(run)
                else:
                    self.samples[slot] = run
            effective.append(max(run["device_ms"], run["wall_ms"] - overhead))
            k += 1
            elapsed = (time.perf_counter() - start) * 1e3
            if k >= plan.get("max_runs", 300):
                break
            if k >= plan.get("min_runs", 10):
                med = statistics.median(effective)
                cv = statistics.pstdev(effective) / med if med > 0 else 0
                if elapsed >= plan.get("budget_ms", 2000) or cv <= plan.get("cv_target", 0.02):
                    break

    def check_timed_outputs(self, k, run, seen, issues):
        """Findings about timed run k's outputs, from the bytes received: fully written (kf_run),
        finite where the check references were, not a repeat of an earlier output."""
        spec = self.spec
        label = "timed run %d" % k
        found = []
        if run["overrun"]:
            found.append("%s: the candidate %s" % (label, run["overrun"]))
        for name, probe in run["probes"]:
            if probe.poisoned:
                found.append("%s: output '%s' still holds the poison in %d elements (not fully written)"
                             % (label, name, probe.poisoned))
            elif probe.nonfinite and spec.get("reference_finite", False):
                found.append("%s: output '%s' has %d NaN/Inf elements; the check trials' references had none"
                             % (label, name, probe.nonfinite))
            digest = probe.digest()
            if self.fresh():
                if not spec.get("degenerate", False):
                    earlier = seen.setdefault(name, {}).get(digest)
                    if earlier:
                        found.append("%s: output '%s' is byte-identical to %s's (a skipped or cached call)"
                                     % (label, name, earlier))
                    seen[name].setdefault(digest, label)
            elif spec.get("deterministic", True):
                checked = getattr(self, "checked", {}).get((run["set"], name))
                if checked and digest not in checked:
                    found.append("%s: output '%s' differs from the checked output of set %d on the same inputs"
                                 % (label, name, run["set"]))
        for f in found:
            if len(issues) < 20:
                issues.append(f)


def run_job(folder):
    return Supervisor(folder).run()


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
