#!/usr/bin/env python3
"""The child of kforge's Python worker (kforge_pyworker.py, docs/python-worker.md): everything
candidate-related, on the supervisor's command.

The supervisor forks it and calls child_main(). It builds the problem's model, loads the
candidate into this interpreter, runs the reference, checks and timed runs, and answers every
command over the channel with raw bytes and its own timers. Once the candidate is loaded,
nothing here is trusted: the candidate can patch any of it. The supervisor relies only on what
it measures itself and on the bytes it receives.

Also here: the channel both processes speak, and the worker's errors.
"""
import copy
import ctypes
import hashlib
import inspect
import json
import mmap
import os
import re
import signal
import socket
import struct
import sys
import time
import traceback
import types

import kforge_inputs
import kforge_kernels

MODEL_SEED = 42  # the seed KernelBench also uses for the model's parameters
# The device's head start before a timed call on CUDA (Device.timed_call): a spin of about this
# long, queued first, so that the call's launches are queued before the device reaches them.
QUEUE_MS = 0.2
QUEUE_CALIBRATION_CYCLES = 2_000_000  # one spin of about a millisecond, to learn the SM clock
QUEUE_SLACK = 1.25  # a queued call's host time leaves out at most this many head starts (timed_call)
# The head start's kernel: every thread waits `cycles` SM clock cycles. Launched on every thread
# slot of every SM (DeviceSpin), it leaves no room for a kernel the candidate queued on a stream
# of its own: nothing of the candidate's runs beside it, unseen by the start event and by the
# supervisor's clock. The same kernel as src/backend/cuda/queue.cu (kforge-worker's), in PTX so
# that this process needs no compiler; the driver compiles it for the device.
SPIN_PTX = b"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry kf_spin(
	.param .u64 kf_spin_cycles
)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [kf_spin_cycles];
	mov.u64 	%rd2, %clock64;
$L_spin:
	mov.u64 	%rd3, %clock64;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.s64 	%p1, %rd4, %rd1;
	@%p1 bra 	$L_spin;
	ret;
}
"""
SPIN_BLOCK = 512  # threads per block: divides every SM's thread slots (1536, 2048)
PR_SET_PDEATHSIG = 1
CHUNK = 1 << 20  # bytes per socket read of a large blob (a multiple of every element size; the digest's piece)
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


def tensor_into(region, offset, t):
    """Copies t's bytes (as tensor_array has them: flat, row-major) into region at offset, from
    the device straight into the shared pages; returns their count."""
    import torch
    src = t.detach().contiguous().reshape(-1)
    n = src.numel() * src.element_size()
    if n:
        torch.frombuffer(region, dtype=torch.uint8, count=n, offset=offset).copy_(src.view(torch.uint8))
    return n


def pin_host_pages(torch, region):
    """Page-locks the shared region for CUDA (cudaHostRegister), so that hand_over's copies from
    the device are one DMA into its pages instead of the driver's staging copies through a
    bounce buffer (8 MiB: about 0.3 ms instead of 2.5 ms). True when it took; the copies work
    either way."""
    try:
        ptr = torch.frombuffer(region, dtype=torch.uint8).data_ptr()
        size = -(-len(region) // mmap.PAGESIZE) * mmap.PAGESIZE  # the mapping's whole pages
        err = torch.cuda.cudart().cudaHostRegister(ptr, size, 0)
        return int(getattr(err, "value", err)) == 0
    except Exception:
        return False


def tensor_hash(t):
    """A digest of t's bytes: BLAKE2b of the host copy for a tensor on the CPU, device_digest
    (computed where t lives, nothing copied) for one on an accelerator. The reference job and
    the candidate's setup hash the same inputs on the same device, so the two kinds never meet."""
    if t.device.type != "cpu":
        return device_digest(t)
    return hashlib.blake2b(memoryview(tensor_array(t)).cast("B"), digest_size=8).hexdigest()


def _signed64(x):
    return x - (1 << 64) if x >= 1 << 63 else x


# splitmix64's finalizer: a bijection of 64-bit values, in int64 arithmetic that wraps.
_MIX_1, _MIX_2 = _signed64(0xbf58476d1ce4e5b9), _signed64(0x94d049bb133111eb)
_LANE_2 = _signed64(0x9e3779b97f4a7c15)
DIGEST_CHUNK_WORDS = 1 << 24


def _mix_(x):
    """splitmix64's finalizer on an int64 tensor, in place; the right shifts are logical."""
    x.bitwise_xor_((x >> 30) & ((1 << 34) - 1))
    x.mul_(_MIX_1)
    x.bitwise_xor_((x >> 27) & ((1 << 37) - 1))
    x.mul_(_MIX_2)
    x.bitwise_xor_((x >> 31) & ((1 << 33) - 1))
    return x


def device_digest(t):
    """A 128-bit digest of t's bytes computed by PyTorch operations where t lives: each 32-bit
    word w at position i becomes the 64-bit value (i << 32) | w, which a bijection (splitmix64's
    finalizer) mixes, and the mixed values are summed modulo 2**64 in two lanes. A change of any
    one word changes exactly one term, so it always changes the sums; unrelated contents collide
    with a probability of about 2**-128. Not a cryptographic hash: it checks that trusted code
    regenerated the same inputs (setup against the reference job), where nothing adversarial
    runs yet. An 8192x8192 float32 weight is hashed on an H200 in milliseconds, against about a
    second for its copy to the host and BLAKE2b."""
    import torch
    raw = t.detach().contiguous().reshape(-1).view(torch.uint8)
    nbytes = raw.numel()
    if nbytes % 4:  # zero bytes to a whole word; the length is part of the digest
        raw = torch.cat([raw, raw.new_zeros(4 - nbytes % 4)])
    elif raw.storage_offset() % 4:  # a 16-bit view that starts mid-word
        raw = raw.clone()
    words = raw.view(torch.int32)
    sums = [0, 0]
    for start in range(0, words.numel(), DIGEST_CHUNK_WORDS):
        w = words[start:start + DIGEST_CHUNK_WORDS].to(torch.int64) & 0xffffffff
        x = torch.arange(start, start + w.numel(), dtype=torch.int64, device=w.device)
        x.mul_(1 << 32)  # i << 32: positions repeat only past 16 GiB
        x.bitwise_or_(w)
        del w
        y = _mix_(x.bitwise_xor(_LANE_2))
        sums[1] = (sums[1] + int(y.sum())) % (1 << 64)
        del y
        sums[0] = (sums[0] + int(_mix_(x).sum())) % (1 << 64)
    return "d%016x%016x%x" % (sums[0], sums[1], nbytes)


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


def is_triton_compile_error(e):
    """Triton compiles a @triton.jit kernel at its first call: its CompilationError (by name,
    so that no Triton import is needed here)."""
    return is_first_call_compile_error(e, ("triton:CompilationError",))


def is_first_call_compile_error(e, kinds):
    """One of the job's `compile_errors` ("<module prefix>:<class name>", the specs'
    first_call_compile_errors): a Python DSL's kernel that does not compile at its first call."""
    for kind in kinds:
        prefix, _, name = kind.partition(":")
        if any(c.__name__ == name and c.__module__.startswith(prefix) for c in type(e).__mro__):
            return True
    return False


def dsl_compile_log(e, path, shown_name):
    """Another DSL's compile error as its message says it (CuTe DSL shows the candidate's line and
    a caret), without terminal colours, the job's file named as the candidate's."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", "%s: %s" % (type(e).__name__, e))
    return text.replace(path, shown_name)[:20000]


def triton_compile_log(e, path, shown_name):
    """A Triton CompilationError written as a compiler's diagnostics: for it and the errors it
    was raised from, "candidate.py:14:9: error: message" at the line of the candidate's file
    (Triton counts from the kernel's def line), the line and a caret under the column.
    "triton kernel line 3, column 9" where the def line is not found in `path`."""
    try:
        file_lines = open(path).read().split("\n")
    except OSError:
        file_lines = []
    chain, seen = [], set()
    while e is not None and id(e) not in seen and is_triton_compile_error(e):
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    out = []
    for err in reversed(chain):  # the innermost first: it says what is wrong
        node, src = getattr(err, "node", None), getattr(err, "src", None) or ""
        line, col = getattr(node, "lineno", None), getattr(node, "col_offset", 0) or 0
        message = getattr(err, "error_message", None) or "in this call"
        src_lines = src.split("\n")
        if line is None or not 1 <= line <= len(src_lines):
            out.append("%s: error: %s" % (shown_name, message))
            continue
        stripped = [l.strip() for l in file_lines]
        def_line = stripped.index(src_lines[0].strip()) if src_lines[0].strip() in stripped else -1
        if def_line >= 0:
            indent = len(file_lines[def_line]) - len(file_lines[def_line].lstrip())
            at, text, column = def_line + line, file_lines[def_line + line - 1], indent + col
            out.append("%s:%d:%d: error: %s" % (shown_name, at, column + 1, message))
        else:
            at, text, column = line, src_lines[line - 1], col
            out.append("triton kernel line %d, column %d: error: %s" % (line, col + 1, message))
        out.append("%5d | %s" % (at, text))
        out.append("%s | %s^" % (" " * max(5, len(str(at))), " " * column))
    return "\n".join(out)


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


class Clock:
    """The child's own stopwatch for the steps of a command, summed per step name: a breakdown
    the supervisor passes on as the child's (diagnostic, untrusted) `child_seconds`."""

    def __init__(self):
        self.laps, self.last = {}, time.perf_counter()

    def lap(self, name):
        now = time.perf_counter()
        self.laps[name] = self.laps.get(name, 0.0) + now - self.last
        self.last = now


class Instance:
    """One KernelBench problem at one size assignment and seed: model, inputs, names. Check
    trials generate their inputs on the CPU (the reference reports their hashes); `fresh` ones,
    for timed runs, on the device (fresh_args)."""

    def __init__(self, module, seed, magnitude, device, model=None, fresh=False, clock=None):
        import torch
        clock = clock or Clock()
        self.module = module
        torch.manual_seed(MODEL_SEED)
        self.init_inputs = list(module.get_init_inputs())
        # The module's own mode (training, as constructed), as KernelBench runs it: BatchNorm uses
        # batch statistics. Every forward call is preceded by torch.manual_seed(seed) so that
        # random operations (dropout) draw the same numbers in the reference and the candidate.
        # Sets with the same constants share one model (its parameters depend only on them).
        if model is None:
            model = construct(device, lambda: module.Model(*self.init_inputs))
            clock.lap("construct model")
        self.model = model
        self.seed = seed
        if fresh:
            args = fresh_args(module, seed, device)
        else:
            torch.manual_seed(seed)
            args = list(module.get_inputs())
        clock.lap("draw inputs")
        try:
            names = [p for p in inspect.signature(module.Model.forward).parameters if p != "self"]
        except (TypeError, ValueError):
            names = []
        if len(names) != len(args) or any(n.startswith("*") for n in names):
            names = ["x%d" % i for i in range(len(args))]
        self.arg_names = names
        self.args = []
        for a in args:
            # A magnitude of 1 scales nothing: skipped (a 32 MiB input's product took 17 ms on
            # the VM) where .to(device) copies from the CPU anyway; elsewhere the product is the
            # copy that keeps two inputs from being one tensor.
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                copied = str(device) != "cpu" and a.device.type == "cpu"
                if magnitude != 1.0 or not copied:
                    a = a * magnitude
            self.args.append(a.to(device) if isinstance(a, torch.Tensor) else a)
        self.model.to(device)  # a no-op when it was constructed there
        clock.lap("inputs to the device")
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

class DeviceSpin:
    """SPIN_PTX through the CUDA driver (ctypes, libcuda), in PyTorch's context, on the current
    stream, over the whole device: SM count x (thread slots per SM / SPIN_BLOCK) blocks, so
    every thread slot of every SM is taken until it ends and a kernel of any other stream waits
    behind it. Raises OSError or RuntimeError where the driver or the module is missing."""

    def __init__(self, torch, index, cuda=None):
        """`cuda`: the driver library (a fake in tests); found here when None."""
        for name in () if cuda is not None else ("libcuda.so.1", "libcuda.so"):
            try:
                cuda = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if cuda is None:
            raise OSError("libcuda is not loadable")
        self.cuda, self.torch = cuda, torch
        torch.cuda.synchronize()  # PyTorch's primary context, current on this thread
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(SPIN_PTX)), "cuModuleLoadData")
        self.check(cuda.cuModuleGetFunction(ctypes.byref(fn), module, b"kf_spin"), "cuModuleGetFunction")
        self.fn, self.module = fn, module
        props = torch.cuda.get_device_properties(index)
        slots = int(getattr(props, "max_threads_per_multi_processor", 2048) or 2048)
        self.blocks = props.multi_processor_count * max(1, slots // SPIN_BLOCK)

    @staticmethod
    def check(err, what):
        if err != 0:
            raise RuntimeError("%s failed (CUresult %d)" % (what, err))

    def __call__(self, cycles):
        arg = ctypes.c_longlong(int(cycles))
        params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(arg), ctypes.c_void_p))
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        self.check(self.cuda.cuLaunchKernel(self.fn, ctypes.c_uint(self.blocks), ctypes.c_uint(1), ctypes.c_uint(1),
                                            ctypes.c_uint(SPIN_BLOCK), ctypes.c_uint(1), ctypes.c_uint(1),
                                            ctypes.c_uint(0), stream, params, None), "cuLaunchKernel (kf_spin)")


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
        self.queue_cycles, self.queue_ms, self.queue_note = 0, 0.0, None
        self.spin = None
        self.last_enqueue_ms = None

    def set_queue(self, ms):
        """A timed call on CUDA is queued behind a spin of `ms` on the device (DeviceSpin, over
        every thread slot of every SM), so that the events and the call's launches reach the
        device's queue before it gets to them: the events then time the device's work, not how
        fast this process's Python and Triton's launcher ran (the launch path of a small Triton
        kernel was 3 to 10 times the kernel on the H200, and grew with the host's load:
        kforge_timing_probe.py). Host work of the call beyond the head start still lands
        between the events; the supervisor's wall clock sees all of it. The spin takes the
        whole device because anything running beside it would be seen by neither the events
        nor that clock (a kernel on a stream of the candidate's own; torch.cuda._sleep, one
        thread, left the rest of the device to it). The cycle count comes from one timed spin."""
        if not self.cuda or ms <= 0:
            return
        t = self.torch
        try:
            spin = DeviceSpin(t, self.index)
            spin(1000)
            start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            start.record()
            spin(QUEUE_CALIBRATION_CYCLES)
            end.record()
            end.synchronize()
        except (OSError, RuntimeError, AttributeError) as e:
            self.queue_note = "the head start's kernel did not run (%s): timed calls are not queued" % e
            return
        spun = start.elapsed_time(end)
        if spun <= 0:
            self.queue_note = "the calibration spin took no time: timed calls are not queued"
            return
        self.spin = spin
        self.queue_cycles = max(1, int(ms * QUEUE_CALIBRATION_CYCLES / spun))
        self.queue_ms = ms

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
                       "persisting_l2_reset": self.l2_reset, "queue_ms": self.queue_ms})
            if self.queue_note:
                fp["queue_note"] = self.queue_note
        else:
            fp.update({"name": cpu_name(), "threads": t.get_num_threads(), "llc_bytes": self.llc})
        try:
            import triton
            fp["triton"] = triton.__version__
        except Exception:
            pass
        return fp

    def timed_call(self, fn, returned=None, queued=False):
        """Runs fn once between device timers; returns (output, device_ms, host_ms). Both are the
        child's own clocks: the supervisor's wall clock is the trusted one. returned(), when
        given, runs the moment fn returns, before anything waits for the device. `queued`: behind
        the head start of set_queue (timed and null runs); last_enqueue_ms is then the host's
        time from the first event to the last, and host_ms leaves out the head start's own time
        on the device (from an event before the spin to the start event), as if nothing had
        been queued, at most QUEUE_SLACK head starts of it: whatever held the start event back
        longer stays in the host time."""
        t = self.torch
        if self.cuda:
            start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            head, hq = None, time.perf_counter()
            if queued and self.queue_cycles:
                head = t.cuda.Event(enable_timing=True)
                head.record()
                self.spin(self.queue_cycles)
            h0 = time.perf_counter()
            start.record()
            out = fn()
            if returned is not None:
                returned()
            end.record()
            self.last_enqueue_ms = (time.perf_counter() - h0) * 1e3
            t.cuda.synchronize()
            h1 = time.perf_counter()
            host = (h1 - h0) * 1e3
            if head is not None:
                host = max(0.0, (h1 - hq) * 1e3 - min(head.elapsed_time(start), QUEUE_SLACK * self.queue_ms))
            return out, start.elapsed_time(end), host
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
        self.hashed = {}  # (dtype, shape, device) -> [(tensor, hash)]: the distinct values hashed
        self.input_files = {}  # hash -> (file, tensor): each distinct input written once
        self.sets = {}          # set index -> RunInputs of its check trial
        self.candidate = None
        self.entry = None       # kf_run entry, or None for models (ModelNew, baselines)
        self.set_models = {}    # set index -> the model that runs it
        self.set_outs = {}      # set index -> kf_run output buffers [(name, dtype, view, guard)]
        self.null_outs = {}     # set index -> outputs of the null op (calibration)
        self.pending = None     # the prepared timed run: (set, null, fn, clones, poison pattern)
        self.last = None        # its outputs, after go
        self.timed_changed = {}  # set index -> names of fresh inputs a timed run changed
        self.region = None      # the supervisor's shared region for outputs (hand_over), if any

    def serve(self):
        while True:
            msg = self.chan.recv()
            blobs = ()
            try:
                reply, blobs = getattr(self, "cmd_" + msg["cmd"])(msg)
            except WorkerError as e:
                reply = {"error": {"stage": e.stage, "message": str(e)}}
            except BaseException as e:  # the candidate's or the model's own exception, SystemExit too
                path = os.path.join(self.folder, self.spec.get("candidate") or "candidate.py")
                if is_triton_compile_error(e):
                    reply = {"error": {"stage": "kernel_compile", "message": triton_compile_log(e, path, os.path.basename(path))}}
                elif is_first_call_compile_error(e, self.spec.get("compile_errors", ())):
                    reply = {"error": {"stage": "kernel_compile", "message": dsl_compile_log(e, path, os.path.basename(path))}}
                else:
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

    def instance(self, s, seed=None, fresh=False, clock=None):
        key = json.dumps(s.get("overrides", {}), sort_keys=True)
        module = self.module(s.get("overrides", {}))
        if clock:
            clock.lap("load module")
        inst = Instance(module, s["seed"] if seed is None else seed, s.get("magnitude", 1.0), self.device.spec,
                        self.models.get(key), fresh or s.get("fresh", False), clock)
        self.models[key] = inst.model
        return inst

    def hash(self, t):
        return self.hash_many([t])[0]

    def hash_many(self, tensors):
        """tensor_hash of each, computed once per distinct value: a tensor seen before, or one
        whose bits equal a hashed tensor's (compared on the device), takes that hash. A model's
        parameters are the same in every set, and `p.data` is a new tensor object at every
        access: hashing an 8192x8192 weight again per set (a copy to the host and 256 MB of
        BLAKE2b) cost 8.4 s of a judgement on an H200. The distinct values left are hashed on up
        to 8 threads at once (the copy to the host and hashlib both release the GIL): the nine
        sets' inputs of a KernelBench GEMM took 1.3 s one after another. Values on an accelerator
        are hashed there (device_digest), one after another."""
        fresh = []  # (tensor, its entry in self.hashed) of values not hashed yet
        slots = []
        for t in tensors:
            key = (id(t), t.data_ptr())
            if key not in self.hashes:  # the entry keeps t alive, so its id is not reused
                same = self.hashed.setdefault((t.dtype, tuple(t.shape), str(t.device)), [])
                entry = next((e for e in same if same_bits(e[0], t)), None)
                if entry is None:
                    entry = [t, None]
                    same.append(entry)
                    fresh.append(entry)
                self.hashes[key] = (t, entry)
            slots.append(self.hashes[key][1])
        def digest(entry):
            return tensor_hash(entry[0])
        on_host = [e for e in fresh if e[0].device.type == "cpu"]
        for entry in fresh:  # device_digest: queued on the device's stream, no thread helps
            if entry[0].device.type != "cpu":
                entry[1] = digest(entry)
        fresh = on_host
        if len(fresh) > 1:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(max_workers=min(8, len(fresh), os.cpu_count() or 1)) as pool:
                digests = list(pool.map(digest, fresh))
        else:
            digests = [digest(entry) for entry in fresh]
        for entry, d in zip(fresh, digests):
            entry[1] = d
        return [entry[1] for entry in slots]

    def pristine(self, t):
        """A private copy of an input, to compare with after each run (exact, on the device)."""
        key = (id(t), t.data_ptr())
        if key not in self.copies:
            self.copies[key] = (t, t.detach().clone())
        return self.copies[key][1]

    def input_states(self, named):
        """Per input "same", or "changed" when it differs from the copy taken before the first run."""
        return ["same" if same_bits(t, self.pristine(t)) else "changed" for t in named.values()]

    def cmd_preload(self, msg):
        """A standby job's first command: PyTorch imported, no device touched yet."""
        clock = Clock()
        import torch
        self.torch = torch
        clock.lap("import torch")
        return {"seconds": clock.laps}, ()

    def cmd_sets(self, msg):
        """A standby job's sets, once the orchestrator knows them."""
        self.spec["sets"] = msg["sets"]
        return {}, ()

    def cmd_init(self, msg):
        if self.spec.get("interpret"):
            os.environ["TRITON_INTERPRET"] = "1"
        clock = Clock()
        import torch
        self.torch = torch
        clock.lap("import torch")
        self.device = Device(self.spec.get("device", "cpu"))
        self.tiny = torch.zeros(1, device=self.device.spec)
        clock.lap("device")
        if self.spec.get("timing"):
            self.device.set_queue(float(self.spec["timing"].get("queue_ms", QUEUE_MS)))
            clock.lap("queue")
        reply = {"fingerprint": self.device.fingerprint(), "llc_bytes": self.device.llc, "seconds": clock.laps}
        if self.region is not None and self.device.cuda:
            reply["shared_region_pinned"] = pin_host_pages(torch, self.region)
            clock.lap("pin the shared region")
        return reply, ()

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
            tensors = inst.tensor_inputs()
            digests = self.hash_many([t for _, _, t in tensors])
            for (name, kind, t), digest in zip(tensors, digests):
                d = {"name": name, "kind": kind, "dtype": dtype_name(t.dtype), "dims": list(t.shape),
                     "hash": digest}
                if self.spec.get("write_inputs", False):
                    d["file"], new = self.input_file(i, name, t, d["hash"])
                    if new:
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

    def input_file(self, i, name, t, digest):
        """The file that holds input `name` of set i, and whether it is new: an input whose bits
        equal an input already written (a model's parameters are the same in every set, and an
        8192x8192 weight is 256 MB) names that file instead of writing the bytes again."""
        held = self.input_files.get(digest)
        if held is not None and held[1].dtype == t.dtype and held[1].shape == t.shape and \
                held[1].device == t.device and same_bits(held[1], t):
            return held[0], False
        f = "in_%d_%s.bin" % (i, name)
        if held is None:
            self.input_files[digest] = (f, t)
        return f, True

    def cmd_setup(self, msg):
        """Builds the problem's models and the check trials' inputs of the given sets, before the
        candidate is loaded."""
        clock = Clock()
        built = []
        for i in msg["sets"]:
            s = self.spec["sets"][i]
            if self.spec["problem"]["kind"] != "kernelbench":
                named = {d["name"]: read_tensor(self.folder, d, self.device.spec) for d in s["inputs"]}
                attrs = {a["name"]: (a["i"] if a.get("integer", False) else a["f"]) for a in s.get("attrs", [])}
                self.sets[i] = RunInputs(list(named.values()), named, attrs, s.get("seed", 0))
                clock.lap("read inputs")
                continue
            inst = self.instance(s, clock=clock)
            built.append((s, inst))
            # Running statistics (buffers) may legitimately change; inputs and parameters may not.
            named = {n: t for n, k, t in inst.tensor_inputs() if k != "buffer"}
            self.sets[i] = RunInputs(inst.args, named, {}, inst.seed, inst)
        # Every set's regenerated inputs against the reference's hashes, hashed together.
        checked = [(s["input_hashes"], inst.tensor_inputs()) for s, inst in built if s.get("input_hashes")]
        digests = iter(self.hash_many([t for _, tensors in checked for _, _, t in tensors]))
        for hashes, tensors in checked:
            got = {n: next(digests) for n, _, _ in tensors}
            if got != hashes:
                raise WorkerError("inputs", "regenerated inputs differ from the reference's (the problem's "
                                  "get_inputs is not deterministic under a fixed seed)")
        if checked:
            clock.lap("hash inputs")
        self.device.sync()
        clock.lap("sync")
        return {"seconds": clock.laps}, ()

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
                    model = construct(self.device.spec, lambda: self.candidate.ModelNew(*inp.inst.init_inputs))
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

    def function(self, i, inp, seeded=True):
        """fn() runs set i's implementation once on inp and returns the list of output tensors.
        `seeded`: fn sets the RNG (torch.manual_seed(inp.seed)) before the call, so that random
        operations (dropout) draw what the reference drew. A timed run's fn is unseeded: its
        prepare sets the seed last (cmd_prepare), outside the device timers."""
        torch = self.torch
        seed = inp.seed
        if self.entry is None:
            model, args = self.set_models[i], inp.args

            def call():
                if seeded:
                    torch.manual_seed(seed)
                return [t for _, t in as_outputs(model(*args))]
            return call
        outs, entry, named, attrs = self.set_outs[i], self.entry, inp.named, inp.attrs
        outputs = {name: t for name, _, t, _ in outs}

        def call():
            if seeded:
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

    def cmd_compile_pass(self, msg):
        """The candidate's first call with its device work captured into a CUDA graph that is
        never launched, in the compile pass's process (kforge_pyworker.py fork_compile_pass),
        which is killed afterwards: what a first call does on the host (Triton's JIT compile
        and launcher builds into the candidate's cache, module loads) happens without the device
        lock. The process is not the judged one because the pass leaves its state wrong: a
        candidate that sets up a buffer lazily at its first call keeps the buffer and never got
        its contents. A call that cannot be captured (it synchronises, reads a value back,
        seeds the generator) ends the pass early; the judged child's first call does the rest."""
        torch, i = self.torch, msg["set"]
        if not self.device.cuda:
            return {"skipped": "not a CUDA device"}, ()
        clock = Clock()
        graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        note = None
        with torch.no_grad(), torch.cuda.stream(stream):
            try:
                graph.capture_begin(capture_error_mode="relaxed")
            except Exception as e:  # a torch without relaxed capture
                return {"skipped": "capture_begin: %s" % kforge_kernels.exception_line(e)}, ()
            try:
                self.function(i, self.sets[i], seeded=False)()
            except BaseException as e:
                note = "ended by %s" % kforge_kernels.exception_line(e)
            finally:
                try:
                    graph.capture_end()
                except Exception as e:
                    note = note or "capture ended with %s" % kforge_kernels.exception_line(e)
        clock.lap("compile pass")
        del graph
        torch.cuda.current_stream().wait_stream(stream)
        return {"seconds": clock.laps, "note": note}, ()

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
            if msg.get("record_kernels"):
                self.record_clock = Clock()
                outs, ms, reply["kernels"] = self.recorded_call(self.function(i, inp), "check set %d" % i)
                reply["seconds"] = self.record_clock.laps
            else:
                outs, ms, _ = self.device.timed_call(self.function(i, inp))
        check_outputs(outs, self.spec["sets"][i]["outputs"])
        reply["overrun"] = self.overrun(i, which)
        reply["ms"] = ms
        if msg.get("after"):
            reply["input_hashes_after"] = self.input_states(inp.named)
        return self.hand_over(reply, outs, self.spec["sets"][i]["outputs"])

    def hand_over(self, reply, outs, expected):
        """The outputs to the supervisor: written into its shared region when they fit (the
        reply's "shared" is their byte count, and no blob follows), else as blobs."""
        sizes = [t.numel() * t.element_size() for t in outs]
        if self.region is not None and sum(sizes) <= len(self.region):
            offset = 0
            for t in outs:
                offset += tensor_into(self.region, offset, t)
            reply["shared"] = offset
            reply["outputs"] = [{"name": d["name"], "nbytes": n} for d, n in zip(expected, sizes)]
            return reply, ()
        arrays = [tensor_array(t) for t in outs]
        reply["outputs"] = [{"name": d["name"], "nbytes": a.nbytes} for d, a in zip(expected, arrays)]
        return reply, arrays

    def recorded_call(self, fn, call):
        """timed_call under a kernel recorder (kforge_kernels.py: CUPTI, else torch.profiler): (outputs, device_ms, the kernels
        record). A profiler that cannot start or read back makes a record that says why; the
        call itself runs either way, and the candidate's own exception passes through."""
        if not self.device.cuda:
            outs, ms, _ = self.device.timed_call(fn)
            return outs, ms, kforge_kernels.unavailable(
                "the device is the CPU (%s): torch.profiler's CUDA activity records device kernels only" % self.device.spec)
        clock = self.record_clock = Clock()
        recorder, why = kforge_kernels.new_recorder(self.torch, call)
        clock.lap("kernel record start")
        if why is not None:
            outs, ms, _ = self.device.timed_call(fn)
            return outs, ms, kforge_kernels.unavailable(why)
        try:
            outs, ms, _ = self.device.timed_call(fn, returned=recorder.returned)
        except BaseException:
            recorder.abandon()
            raise
        clock.lap("recorded call")
        record = recorder.finish()
        clock.lap("kernel record finish")
        return outs, ms, record

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
        """Sets up one timed run of set j: fresh inputs from the seed (the module's get_inputs for
        KernelBench problems, the inputs' generators for kforge problems; without a seed the set's
        check inputs), poisoned kf_run outputs, a flushed cache. A null run (calibration)
        prepares the same way and then runs a trivial op."""
        j, seed, null = msg["set"], msg["seed"], msg.get("null", False)
        which = int(msg.get("poison", 0)) & 1  # the supervisor alternates it, as kforge-worker does
        s = self.spec["sets"][j]
        inp, clones = self.sets[j], []
        if seed is not None and self.spec["problem"]["kind"] == "kernelbench":
            inst = self.instance(s, seed=seed, fresh=True)
            named = {n: t for n, k, t in inst.tensor_inputs() if k != "buffer"}
            inp = RunInputs(inst.args, named, {}, seed, inst)
            clones = [(n, t, t.detach().clone()) for n, k, t in inst.tensor_inputs() if k == "input"]
        elif seed is not None:
            # GenerateTensor's values (kforge_inputs.py), drawn on the host and uploaded.
            named = {d["name"]: kforge_inputs.tensor(self.torch, d["gen"], d["dtype"], d["dims"], seed,
                                                     s.get("magnitude", 1.0), self.device.spec)
                     for d in s["inputs"]}
            inp = RunInputs(list(named.values()), named, self.sets[j].attrs, seed)
            clones = [(n, t, t.detach().clone()) for n, t in named.items()]
        if null:
            if j not in self.null_outs:
                self.null_outs[j] = self.output_buffers(s["outputs"], GUARD_ELEMENTS if self.spec.get("entry") == "kf_run" else 0)
            outs = self.null_outs[j]
            for _, dt, t, guard in outs if self.spec.get("entry") == "kf_run" else ():
                poison_fill(t, dt, 0)
                poison_fill(guard, dt, 0)
            fn = self.null_function([t for _, _, t, _ in outs])
        else:
            self.poison(j, which)
            fn = self.function(j, inp, seeded=False)
        if self.spec["timing"].get("flush", True) and msg.get("flush", True):
            self.device.flush()
        self.device.sync()
        # The run's RNG state, set last and outside the timers: torch.manual_seed takes about
        # 0.16 ms of host time (H200, PyTorch 2.11; kforge_timing_probe.py), eight times gelu's
        # kernel, and nothing from here to the call draws random numbers (the flush fills).
        self.torch.manual_seed(inp.seed)
        self.pending = (j, null, fn, clones, which)
        return {}, ()

    def null_function(self, outs):
        tiny = self.tiny

        def call():
            tiny.add_(1.0)
            return outs
        return call

    def cmd_flush(self, msg):
        """The cache flush of the prepared run, apart from its prepare: the supervisor takes the
        device exclusive between the two (kforge_pyworker.py, one_run)."""
        if self.pending is None:
            raise WorkerError("run", "flush before prepare")
        if self.spec["timing"].get("flush", True):
            self.device.flush()
        self.device.sync()
        return {}, ()

    def cmd_go(self, msg):
        j, null, fn, clones, _ = self.pending
        with self.torch.no_grad():
            outs, dms, hms = self.device.timed_call(fn, queued=True)
        self.last = outs
        reply = {"device_ms": dms, "host_ms": hms}
        if self.device.queue_cycles:
            reply["enqueue_ms"] = self.device.last_enqueue_ms
        return reply, ()

    def cmd_collect(self, msg):
        """The outputs of the run just done, as blobs, plus what the child saw: writes past the
        end of kf_run outputs, fresh inputs the call changed."""
        j, null, fn, clones, which = self.pending
        outs, expected = list(self.last), self.spec["sets"][j]["outputs"]
        check_outputs(outs, expected)
        reply = {"overrun": None if null else self.overrun(j, which),
                 "inputs_changed": [n for n, t, c in clones if not same_bits(t, c)]}
        self.timed_changed.setdefault(j, set()).update(reply["inputs_changed"])
        self.pending = self.last = None
        return self.hand_over(reply, outs, expected)

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


def construct(device, build):
    """build() with torch.manual_seed(MODEL_SEED), its parameters created on `device` directly:
    an 8192x8192 layer initialises in well under a second on a GPU and in about 11 s on the CPU.
    The reference and the candidate are constructed the same way, so equal seeds still give equal
    parameters (and ModelNew gets the reference's whenever their names and shapes match). A
    module that cannot be constructed there is constructed on the CPU, in both jobs alike."""
    import torch
    place = torch.device(device)
    if place.type != "cpu" and hasattr(place, "__enter__"):  # torch.device is a context from 2.0
        try:
            torch.manual_seed(MODEL_SEED)
            with place:
                return build()
        except Exception:
            pass
    torch.manual_seed(MODEL_SEED)
    return build()


def copy_parameters(reference, candidate):
    """Gives ModelNew the reference's parameters when their names and shapes match (KernelBench
    relies on equal seeds instead); says whether it did."""
    ref, cand = reference.state_dict(), candidate.state_dict()
    if set(ref) == set(cand) and all(ref[k].shape == cand[k].shape for k in ref):
        candidate.load_state_dict(ref)
        return "copied from the reference (%d tensors)" % len(ref)
    return ("not copied: ModelNew's state (%s) differs from Model's (%s); both were initialised with seed %d" %
            (", ".join(sorted(cand)) or "empty", ", ".join(sorted(ref)) or "empty", MODEL_SEED))


def child_main(spec, folder, sock, out_fd, supervisor, region=None):
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
        child = Child(spec, folder, chan)
        child.region = region
        child.serve()
    except ChildGone:
        pass
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(0)
