"""Which device kernels one call of a Python candidate ran: torch.profiler around one checking
call, read back as the worker's `kernels` record (docs/worker-protocol.md, "kernels").

Runs in the child (kforge_pychild.py), so what it reports is the candidate's to forge like every
other thing the child says; the orchestrator's classifier (src/eval/kernels.cc) reads it as an
account, not as proof.

Three parts, each usable alone:
- group_events(events, ...): plain KernelEvent tuples -> the record (no torch needed: tests feed
  it fake events);
- trace_events(trace): a Kineto chrome trace (the dict torch.profiler exports) -> KernelEvents;
- CuptiRecorder: CUPTI's activity API through ctypes, on the libcupti the process already has
  (PyTorch's): starts in about 20 ms where torch.profiler takes 4 to 6 s (Kineto's start, on an
  H200 with torch 2.11 and CUPTI 13); the recorder a child uses when it can;
- Recorder: torch.profiler around the call, the fallback (no libcupti found, or CUPTI refuses);
- new_recorder(torch, call): the first of the two that starts.
Every failure becomes {"available": false, "reason": ...}, never an exception.

Time base. Kineto reports device activity (CUPTI records) on the host's clock: the trace's
`baseTimeNanoseconds + ts * 1000` is Unix-epoch nanoseconds, time.time_ns()'s clock (seen with
torch 2.11 and CUPTI 13 on an H200: a kernel still running when the call returned ended 2.4 ms
after time.time_ns() read there). Recorder checks that on every record with a probe kernel of
its own launched and synchronized just before the call: a probe that ends outside the host
times around it means the clocks disagree (or CUPTI recorded nothing), and the record says so
instead of counting kernels against the wrong clock.
"""
import collections
import ctypes
import glob
import json
import os
import tempfile
import time
import warnings

SOURCE = "torch.profiler"
MAX_RECORDS = 200       # distinct kernel names kept (the longest-running); the rest are counted
MAX_NAME = 2000         # characters of a kernel name kept
CLOCK_SLACK_NS = 200000  # how far the probe may sit outside its host bracket (clock rounding)

# kind: "kernel", "memcpy" or "memset"; times in host-clock nanoseconds; stream: CUPTI's stream
# id; graph: launched by a CUDA graph; nbytes: bytes a copy or memset moved (0 for kernels).
KernelEvent = collections.namedtuple("KernelEvent", "kind name start_ns end_ns stream graph nbytes")


def unavailable(reason, source=SOURCE):
    return {"source": source, "available": False, "reason": reason}


def group_events(events, returned_ns, call, window_ms, source=SOURCE):
    """The record of one call: kernels grouped by name (calls, total device time, streams, graph,
    how many ended after the host saw the call return at returned_ns), the longest-running
    first; copies and memsets together under `memcpy`."""
    by_name = {}
    copies = {"count": 0, "device_ms": 0.0, "bytes": 0}
    for e in events:
        ms = max(0, e.end_ns - e.start_ns) / 1e6
        if e.kind != "kernel":
            copies["count"] += 1
            copies["device_ms"] += ms
            copies["bytes"] += int(e.nbytes or 0)
            continue
        name = str(e.name)[:MAX_NAME]
        r = by_name.setdefault(name, {"name": name, "calls": 0, "device_ms": 0.0, "streams": set(),
                                      "graph": False, "after_return": 0})
        r["calls"] += 1
        r["device_ms"] += ms
        r["streams"].add(int(e.stream))
        r["graph"] = r["graph"] or bool(e.graph)
        r["after_return"] += 1 if e.end_ns > returned_ns else 0
    records = sorted(by_name.values(), key=lambda r: (-r["device_ms"], r["name"]))
    for r in records:
        r["streams"] = sorted(r["streams"])
        r["device_ms"] = round(r["device_ms"], 6)
    copies["device_ms"] = round(copies["device_ms"], 6)
    out = {"source": source, "available": True, "call": call, "records": records[:MAX_RECORDS],
           "memcpy": copies, "window_ms": round(window_ms, 6)}
    if len(records) > MAX_RECORDS:
        out["records_left_out"] = len(records) - MAX_RECORDS
    return out


KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset", "memset": "memset"}
LAUNCHES = ("cuda_runtime", "cuda_driver", "runtime", "driver")


def trace_events(trace):
    """KernelEvents of a Kineto chrome trace, sorted by start. Categories as Kineto names them
    ("kernel", "gpu_memcpy", "gpu_memset"; capitalised in older versions); ts and dur are
    microseconds since baseTimeNanoseconds (absent, 0, in older versions). A kernel is a graph's
    when the runtime call it correlates with is a graph launch."""
    base = int(trace.get("baseTimeNanoseconds", 0))
    raw = [e for e in trace.get("traceEvents", []) if isinstance(e, dict) and e.get("ph") == "X"]
    graph_launches = set()
    for e in raw:
        if str(e.get("cat", "")).lower() in LAUNCHES and "GraphLaunch" in str(e.get("name", "")):
            graph_launches.add((e.get("args") or {}).get("correlation"))
    graph_launches.discard(None)
    out = []
    for e in raw:
        kind = KINDS.get(str(e.get("cat", "")).lower())
        if kind is None:
            continue
        args = e.get("args") or {}
        start = base + int(round(float(e["ts"]) * 1000))
        end = start + int(round(float(e.get("dur", 0)) * 1000))
        out.append(KernelEvent(kind, str(e.get("name", "")), start, end, int(args.get("stream", e.get("tid", -1)) or 0),
                               args.get("correlation") in graph_launches, int(args.get("bytes", 0) or 0)))
    out.sort(key=lambda k: k.start_ns)
    return out


def split_probe(events, before_ns, after_ns):
    """(the probe's event, the others): the probe is the first device activity of the window
    (everything earlier was synchronized before the profiler started). None when there is none
    or it lies outside [before_ns, after_ns] (with CLOCK_SLACK_NS): then the trace's clock is not
    the host's, or nothing was recorded."""
    if not events:
        return None, events
    probe = events[0]
    if probe.start_ns < before_ns - CLOCK_SLACK_NS or probe.end_ns > after_ns + CLOCK_SLACK_NS:
        return None, events
    return probe, events[1:]


def exception_line(e):
    """An exception as one short line: its type and the first line of its message."""
    return "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")


def bracket_probe(torch, stream, probe, now):
    """Launches the probe (a one-element add) on its own stream and synchronizes: the clock `now`
    read before and after, the window its device activity must lie in (split_probe)."""
    before = now()
    with torch.cuda.stream(stream):
        probe.add_(1.0)
    torch.cuda.synchronize()
    return before, now()


class Recorder:
    """torch.profiler (CUDA activity only: kernels, copies, and the runtime calls that launched
    them) around one call. start() before it, returned() the moment it returns (before the
    synchronize), finish() after the synchronize. Costs the profiler's start-up once per process
    (CUPTI, 3.4 to 4.9 s on an H200) and a few milliseconds per call; never used for timed runs.
    CUPTI is torn down afterwards (TEARDOWN_CUPTI=1), so later launches cost what they did before;
    only one profile per process, since re-initialising CUPTI after a teardown can crash with
    CUDA graphs (torch itself keeps CUPTI attached when Inductor's cudagraphs are on)."""

    def __init__(self, torch, call):
        self.torch, self.call = torch, call
        self.prof = None
        self.returned_ns = self.probe_before_ns = self.probe_after_ns = None
        self.start_seconds = 0.0

    def start(self):
        """Starts profiling and runs the probe; returns None, or why no record can be made
        (then profiling is off again)."""
        torch = self.torch
        try:
            from torch.profiler import ProfilerActivity, profile
            stream = torch.cuda.Stream()
            probe = torch.zeros(1, device="cuda")
            torch.cuda.synchronize()
            # Without a teardown CUPTI stays attached after the profile and every later launch
            # costs about 2.5 us more on the host (H200, torch 2.11): the timed runs would pay.
            os.environ.setdefault("TEARDOWN_CUPTI", "1")
            self.prof = profile(activities=[ProfilerActivity.CUDA])
            t0 = time.perf_counter()
            with warnings.catch_warnings():  # "Profiler clears events at the end of each cycle"
                warnings.simplefilter("ignore")
                self.prof.__enter__()
            self.start_seconds = time.perf_counter() - t0
            self.probe_before_ns, self.probe_after_ns = bracket_probe(torch, stream, probe, time.time_ns)
            return None
        except Exception as e:
            self.abandon()
            return "torch.profiler did not start: " + exception_line(e)

    def returned(self):
        self.returned_ns = time.time_ns()

    def abandon(self):
        """Stops profiling without a record (the call raised, or start failed)."""
        prof, self.prof = self.prof, None
        if prof is not None:
            try:
                prof.__exit__(None, None, None)
            except Exception:
                pass

    def finish(self):
        """Stops profiling and returns the record (or why there is none)."""
        ended_ns = time.time_ns()
        prof, self.prof = self.prof, None
        try:
            prof.__exit__(None, None, None)
            trace = export_trace(prof)
        except Exception as e:
            return unavailable("torch.profiler failed: " + exception_line(e))
        events = trace_events(trace)
        probe, events = split_probe(events, self.probe_before_ns, self.probe_after_ns)
        if probe is None:
            return unavailable("torch.profiler recorded no probe kernel between the host times around it "
                               "(no CUPTI in this torch build, or its clock is not time.time_ns()'s); %d device events"
                               % len(events))
        returned = self.returned_ns if self.returned_ns is not None else ended_ns
        record = group_events(events, returned, self.call, (ended_ns - self.probe_after_ns) / 1e6)
        record["profiler_start_s"] = round(self.start_seconds, 3)
        return record


# --- CUPTI through ctypes ----------------------------------------------------------------------
#
# The activity records' leading fields, at the offsets src/backend/cuda/cupti.h asserts for
# kforge-worker's own recorder (CUpti_ActivityKernel5..10, Memcpy5/6, Memset4: CUDA 11.x to 13):
KIND_MEMCPY, KIND_MEMSET, KIND_KERNEL = 1, 2, 10   # CUPTI_ACTIVITY_KIND_*
KERNEL_FIELDS = {"start": (16, ctypes.c_uint64), "end": (24, ctypes.c_uint64), "stream": (48, ctypes.c_uint32),
                 "name": (104, ctypes.c_void_p), "graph_node": (144, ctypes.c_uint64), "graph": (156, ctypes.c_uint32)}
COPY_FIELDS = {"bytes": (8, ctypes.c_uint64), "start": (16, ctypes.c_uint64), "end": (24, ctypes.c_uint64),
               "stream": (40, ctypes.c_uint32), "graph_node": (64, ctypes.c_uint64), "graph": (72, ctypes.c_uint32)}
CUPTI_SOURCE = "cupti"
BUFFER_BYTES = 1 << 20


_demangler = None


def demangle(name):
    """A C++ kernel's name as torch.profiler showed it (`k(float*, int)`, `void at::native::...`):
    __cxa_demangle of the libstdc++ every PyTorch process has loaded. Other names (Triton's, C
    kernels') and names it cannot read come back unchanged."""
    global _demangler
    if not name.startswith("_Z"):
        return name
    if _demangler is None:
        try:
            f = getattr(ctypes.CDLL("libstdc++.so.6"), "__cxa_demangle")
            f.restype = ctypes.c_void_p
            f.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            free = ctypes.CDLL(None).free
            free.argtypes = [ctypes.c_void_p]
            _demangler = (f, free)
        except (OSError, AttributeError):
            _demangler = False
    if not _demangler:
        return name
    f, free = _demangler
    status = ctypes.c_int(-1)
    p = f(name.encode("utf-8", "replace"), None, None, ctypes.byref(status))
    if not p:
        return name
    try:
        return ctypes.string_at(p).decode("utf-8", "replace") if status.value == 0 else name
    finally:
        free(p)


def decode_activity(address):
    """The KernelEvent of the activity record at `address`, or None for a kind not recorded. C++
    kernel names are demangled (demangle), as torch.profiler reported them; kforge-worker's
    own record keeps them mangled, and the orchestrator's classifier reads both."""
    kind = ctypes.c_int32.from_address(address).value
    if kind == KIND_KERNEL:
        f = {k: t.from_address(address + off).value for k, (off, t) in KERNEL_FIELDS.items()}
        name = demangle(ctypes.string_at(f["name"]).decode("utf-8", "replace")) if f["name"] else "?"
        return KernelEvent("kernel", name, f["start"], f["end"], f["stream"], bool(f["graph"] or f["graph_node"]), 0)
    if kind in (KIND_MEMCPY, KIND_MEMSET):
        f = {k: t.from_address(address + off).value for k, (off, t) in COPY_FIELDS.items()}
        return KernelEvent("memcpy" if kind == KIND_MEMCPY else "memset", "", f["start"], f["end"], f["stream"],
                           bool(f["graph"] or f["graph_node"]), f["bytes"])
    return None


def cupti_candidates(maps_text=None, torch_dir=None):
    """Where libcupti may be: first the one this process has mapped (PyTorch loads its own when it
    is imported; a second copy could not share CUPTI's one subscriber slot with it), then the
    NVIDIA wheels beside torch, then KFORGE_CUPTI."""
    out = []
    if maps_text is None:
        try:
            with open("/proc/self/maps") as f:
                maps_text = f.read()
        except OSError:
            maps_text = ""
    for line in maps_text.splitlines():
        path = line.split()[-1] if line.split() else ""
        if os.path.basename(path).startswith("libcupti.so") and path not in out:
            out.append(path)
    if torch_dir:
        for pattern in ("nvidia/*/lib/libcupti.so*", "nvidia/cuda_cupti/lib/libcupti.so*"):
            out += [p for p in sorted(glob.glob(os.path.join(torch_dir, "..", pattern))) if p not in out]
    env = os.environ.get("KFORGE_CUPTI", "")
    if env:
        out += sorted(glob.glob(os.path.join(env, "libcupti.so*"))) if os.path.isdir(env) else [env]
    return out


_REQUESTED = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                              ctypes.POINTER(ctypes.c_size_t))
_COMPLETED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)


class CuptiRecorder:
    """CUPTI's activity API (kernels, copies, memsets) around one call, through ctypes on the
    process's libcupti; the same start / returned / finish / abandon as Recorder, on CUPTI's
    clock (cuptiGetTimestamp) instead of time.time_ns(). Afterwards the activities are disabled
    and CUPTI detached (cuptiFinalize), so that timed runs pay nothing for it; one record per
    process, as with Recorder."""

    def __init__(self, torch, call):
        self.torch, self.call = torch, call
        self.lib = self.library = None
        self.kinds = []
        self.events, self.buffers = [], {}
        self.copy_reason = ""
        self.returned_ns = self.probe_before_ns = self.probe_after_ns = None
        self.start_seconds = 0.0
        self.callbacks = None

    def now(self):
        ts = ctypes.c_uint64(0)
        self.lib.cuptiGetTimestamp(ctypes.byref(ts))
        return ts.value

    def _requested(self, buffer, size, max_records):
        b = ctypes.create_string_buffer(BUFFER_BYTES + 8)
        address = (ctypes.addressof(b) + 7) & ~7  # CUPTI wants 8-byte alignment
        self.buffers[address] = b
        buffer[0], size[0], max_records[0] = address, BUFFER_BYTES, 0

    def _completed(self, context, stream, buffer, size, valid):
        record = ctypes.c_void_p()
        while self.lib.cuptiActivityGetNextRecord(ctypes.c_void_p(buffer), ctypes.c_size_t(valid), ctypes.byref(record)) == 0:
            e = decode_activity(record.value)
            if e is not None:
                self.events.append(e)
        self.buffers.pop(buffer, None)

    def start(self):
        """Enables the activities and runs the probe; None, or why there will be no record."""
        torch = self.torch
        for path in cupti_candidates(torch_dir=os.path.dirname(getattr(torch, "__file__", "") or "")):
            try:
                self.lib, self.library = ctypes.CDLL(path), path
                break
            except OSError:
                continue
        if self.lib is None:
            return "no libcupti in this process, beside torch or in KFORGE_CUPTI"
        try:
            stream = torch.cuda.Stream()
            probe = torch.zeros(1, device="cuda")
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            self.callbacks = (_REQUESTED(self._requested), _COMPLETED(self._completed))
            rc = self.lib.cuptiActivityRegisterCallbacks(*self.callbacks)
            if rc != 0:
                return "cuptiActivityRegisterCallbacks failed: CUPTI error %d" % rc
            rc = self.lib.cuptiActivityEnable(KIND_KERNEL)
            if rc != 0:
                return "cuptiActivityEnable(CONCURRENT_KERNEL) failed: CUPTI error %d" % rc
            self.kinds.append(KIND_KERNEL)
            for kind in (KIND_MEMCPY, KIND_MEMSET):
                rc = self.lib.cuptiActivityEnable(kind)
                if rc == 0:
                    self.kinds.append(kind)
                else:
                    self.copy_reason = "cuptiActivityEnable(%s) failed: CUPTI error %d" % (
                        "MEMCPY" if kind == KIND_MEMCPY else "MEMSET", rc)
            self.start_seconds = time.perf_counter() - t0
            self.probe_before_ns, self.probe_after_ns = bracket_probe(torch, stream, probe, self.now)
            return None
        except Exception as e:
            self.abandon()
            return "CUPTI did not start: " + exception_line(e)

    def returned(self):
        self.returned_ns = self.now()

    def _stop(self):
        """Disables the activities, flushes what CUPTI holds into self.events and detaches CUPTI;
        the first CUPTI error, or 0."""
        failed = 0
        for kind in self.kinds:
            self.lib.cuptiActivityDisable(kind)
        self.kinds = []
        failed = self.lib.cuptiActivityFlushAll(1) or failed  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED
        finalize = getattr(self.lib, "cuptiFinalize", None)
        if finalize is not None:
            finalize()
        return failed

    def abandon(self):
        if self.lib is not None and self.kinds:
            try:
                self._stop()
            except Exception:
                pass

    def finish(self):
        try:
            ended_ns = self.now()
            flushed = self._stop()
        except Exception as e:
            return unavailable("CUPTI failed: " + exception_line(e), CUPTI_SOURCE)
        if flushed:
            return unavailable("cuptiActivityFlushAll failed: CUPTI error %d" % flushed, CUPTI_SOURCE)
        events = sorted(self.events, key=lambda e: e.start_ns)
        probe, events = split_probe(events, self.probe_before_ns, self.probe_after_ns)
        if probe is None:
            return unavailable("CUPTI recorded no probe kernel between the timestamps around it; %d device events"
                               % len(events), CUPTI_SOURCE)
        returned = self.returned_ns if self.returned_ns is not None else ended_ns
        record = group_events(events, returned, self.call, (ended_ns - self.probe_after_ns) / 1e6, CUPTI_SOURCE)
        record["profiler_start_s"] = round(self.start_seconds, 3)
        record["library"] = self.library
        if self.copy_reason:
            record["memcpy_reason"] = self.copy_reason
        return record


def new_recorder(torch, call):
    """(recorder, None) started, or (None, why not): CuptiRecorder first, torch.profiler's Recorder
    when CUPTI cannot start (KFORGE_KERNEL_RECORDER=torch.profiler asks for it directly). The
    reasons of both are given when neither starts."""
    reasons = []
    if os.environ.get("KFORGE_KERNEL_RECORDER", "") != "torch.profiler":
        r = CuptiRecorder(torch, call)
        why = r.start()
        if why is None:
            return r, None
        reasons.append(why)
    r = Recorder(torch, call)
    why = r.start()
    if why is None:
        return r, None
    reasons.append(why)
    return None, "; ".join(reasons)


def export_trace(prof):
    """The profile as the chrome-trace dict Kineto writes (the one export with copy sizes and
    categories), through a temporary file that is removed again."""
    fd, path = tempfile.mkstemp(prefix=".kf-trace-", suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
