#!/usr/bin/env python3
"""kforge's Python worker: hosts PyTorch references, baselines and Python candidates.

The C++ orchestrator starts it in the same sandbox as kforge-worker and talks the protocol in
docs/python-worker.md: it writes job.json (and input files) into a private folder, runs
`python3 kforge_pyworker.py run <folder>` there, and reads result.json plus raw output files.
`probe` prints what this interpreter can do.

Two processes do a job. The supervisor (this process) never imports or runs candidate code: it
forks a child (kforge_pychild.py) that builds the model, imports the candidate, runs checks and
timed runs on command over a socket pair, and sends back raw bytes and its own (untrusted)
timers. The supervisor keeps the trusted clock, draws the seeds of the fresh inputs of every
timed run, checks every timed output, writes every file and result.json, kills the child and,
as its last act, prints `kforge-result <SHA-256 of result.json>` on its stdout, which the child
never holds. The worker draws no verdicts: the orchestrator compares and judges.

This is the only Python in kforge; it needs PyTorch, and Triton for Triton candidates.
"""
import ctypes
import hashlib
import json
import math
import mmap
import os
import re
import secrets
import signal
import socket
import stat
import statistics
import sys
import tempfile
import threading
import time
import traceback

import kforge_kernels
from kforge_pychild import CHUNK, ELEMENT_SIZE, POISON, Channel, ChildGone, WorkerError, child_main, thread_count

STDERR_TAG = "kforge-worker: "
PIECE = CHUNK  # bytes per piece of a file's digest (kDigestPieceBytes in src/base/files.h)
NULL_RUNS = 20  # calibration runs of the command path before the candidate loads (at most)
FLUSH_EVERY = 4  # null runs flush the cache in every FLUSH_EVERY-th run only
RUN_SERIES = ("device_ms", "host_ms", "wall_ms", "prepare_ms", "collect_ms", "copy_ms")  # one entry per timed run


def timing_series():
    """The timing report's per-run lists, empty: the one place that names them (Supervisor.run_timing
    and the timed loop's tests both start from it)."""
    return {k: [] for k in RUN_SERIES + ("enqueue_ms", "sets_used", "seeds", "magnitudes", "issues")}
PR_SET_DUMPABLE = 4
CHILD_OUTPUT_TAIL = 64 << 10  # bytes of the child's stdout/stderr kept and passed on
CHILD_OUTPUT_CAP = 64 << 20  # more than this from the child is a flood: it is killed
MAX_KERNELS_RECORD = 1 << 20  # bytes of the child's kernels record (JSON) passed on


# --- Files in the job folder: written atomically, each with its SHA-256. ----------------------

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}$")


class FileSink:
    """Streams bytes into <folder>/<name> through a fresh temporary file (O_EXCL, random name,
    so nothing prepared in the folder can redirect the write); close() renames it into place and
    returns the file's digest (piece_digest: the SHA-256 of each PIECE-byte piece, hashed on the
    Scanner's threads as the bytes arrive; kforge's PieceDigestHex)."""

    def __init__(self, folder, name):
        if not SAFE_NAME.match(name) or name in ("result.json", "job.json"):
            raise WorkerError("run", "refusing to write a file named %r" % name)
        self.path = os.path.join(folder, name)
        fd, self.tmp = tempfile.mkstemp(dir=folder, prefix=".kf-")
        self.f = os.fdopen(fd, "wb")
        self.partial = bytearray()  # the start of the next piece
        self.pieces = []            # futures of the pieces' SHA-256

    def __call__(self, chunk):
        self.f.write(chunk)
        view = memoryview(chunk).cast("B")
        if not self.partial and len(view) == PIECE:  # a whole piece as it came (read_blob's)
            data = view if view.readonly else bytes(view)
            self.pieces.append(Scanner.submit(lambda d: hashlib.sha256(d).digest(), data))
            return
        self.partial += view
        while len(self.partial) >= PIECE:
            data = bytes(self.partial[:PIECE])
            del self.partial[:PIECE]
            self.pieces.append(Scanner.submit(lambda d: hashlib.sha256(d).digest(), data))

    def close(self):
        self.f.close()
        if self.partial:
            self.pieces.append(Scanner.submit(lambda d: hashlib.sha256(d).digest(), bytes(self.partial)))
        os.replace(self.tmp, self.path)
        return piece_digest(f.result() for f in self.pieces)


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
        self.data["files"][name] = write_file(self.folder, name, chunks)


def write_file(folder, name, chunks):
    """The chunks into <folder>/<name> through a FileSink; returns the file's digest."""
    sink = FileSink(folder, name)
    for c in chunks:
        sink(c)
    return sink.close()


def pieces_of(view):
    """A view in CHUNK-byte pieces (what sinks are fed)."""
    return (view[k:k + CHUNK] for k in range(0, len(view), CHUNK))


# --- The supervisor. -------------------------------------------------------------------------

COMPILE_PASS_SECONDS = 90  # the longest the judged child waits for the compile pass

def output_bytes(desc):
    """The byte size of an output as the job describes it (dtype, dims)."""
    n = ELEMENT_SIZE[desc["dtype"]]
    for x in desc["dims"]:
        n *= x
    return n


class Scanner:
    """A thread pool for the supervisor's scans of output bytes: hashlib and numpy release the
    GIL on large buffers, so the pieces of a 32 MiB output are hashed and scanned on several
    cores while the next piece is still being read from the socket. Created on first use, in
    the supervisor (after every fork)."""

    pool = None

    @classmethod
    def submit(cls, fn, *args):
        if cls.pool is None:
            from concurrent.futures import ThreadPoolExecutor
            cls.pool = ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1)))
        return cls.pool.submit(fn, *args)


def write_files(folder, names, views):
    """Each view into <folder>/<name> (write_file); their digests, in order."""
    return [write_file(folder, name, pieces_of(view)) for name, view in zip(names, views)]


def piece_digest(pieces):
    """The digest of a blob from the SHA-256 of each of its PIECE-byte pieces, in order: the
    SHA-256 of their concatenation (of nothing for an empty blob). Files are named by it
    (FileSink, and PieceDigestHex on the C++ side), and outputs are told apart by it (OutputProbe,
    whose pieces are the CHUNK-byte ones Channel.read_blob hands over: PIECE bytes)."""
    h = hashlib.sha256()
    for d in pieces:
        h.update(d)
    return h.hexdigest()


class OutputProbe:
    """What the supervisor learns from one output's bytes as they arrive: their digest
    (piece_digest), how many elements are NaN/Inf and how many still hold the poison pattern;
    keeps them when asked. Each piece is copied off the channel's buffer and scanned on the
    Scanner's threads; reading the results waits for every piece."""

    def __init__(self, dtype, poison_bits, keep):
        import numpy
        self.np = numpy
        self.dtype, self.keep = dtype, keep
        self.nbytes = 0
        self.chunks = []
        self.pending = []
        self.scanned = None
        width = ELEMENT_SIZE[dtype]
        self.view = {2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}[width]
        self.exp = {"float32": 0x7f800000, "float64": 0x7ff0000000000000, "float16": 0x7c00,
                    "bfloat16": 0x7f80}.get(dtype)
        self.poison = None if poison_bits is None else poison_bits & ((1 << (8 * width)) - 1)
        # float32 and float64: numpy's isfinite, 3.5x faster than the exponent mask (numpy has
        # no bfloat16, so 16-bit types keep the mask).
        self.floats = {"float32": numpy.float32, "float64": numpy.float64}.get(dtype)

    def __call__(self, chunk):
        self.nbytes += len(chunk)
        # The channel reuses its buffer for the next piece; a piece of the supervisor's own
        # copy (read-only) is kept as it is.
        data = chunk if isinstance(chunk, memoryview) and chunk.readonly else bytes(chunk)
        if self.keep:
            self.chunks.append(data)
        self.pending.append(Scanner.submit(self.scan, data))

    def scan(self, data):
        """(SHA-256, NaN/Inf count, poison count) of one piece."""
        np = self.np
        digest = hashlib.sha256(data).digest()
        nonfinite = poisoned = 0
        if self.exp is None and self.poison is None:
            return digest, 0, 0
        a = np.frombuffer(data, dtype=self.view)
        if self.floats is not None:
            f = a.view(self.floats)
            nonfinite = f.size - int(np.count_nonzero(np.isfinite(f)))
        elif self.exp is not None:
            nonfinite = int(np.count_nonzero((a & self.view(self.exp)) == self.view(self.exp)))
        if self.poison is not None:
            poisoned = int(np.count_nonzero(a == self.view(self.poison)))
        return digest, nonfinite, poisoned

    def result(self):
        if self.scanned is None:
            parts = [f.result() for f in self.pending]
            self.scanned = (piece_digest(p[0] for p in parts), sum(p[1] for p in parts), sum(p[2] for p in parts))
            self.pending = []
        return self.scanned

    @property
    def nonfinite(self):
        return self.result()[1]

    @property
    def poisoned(self):
        return self.result()[2]

    def digest(self):
        return self.result()[0]


class DeviceLock:
    """The lock of base/device_lock.h: flock on the lock file, every request taken through its
    turnstile (`<lock>.gate`), so that a waiting exclusive request is served before any later
    shared one. Read-only descriptors: the sandbox's filesystem is, and flock needs no write."""

    def __init__(self, path):
        import fcntl
        self.fcntl = fcntl
        self.fd = open(path, "r")
        try:
            self.gate = open(path + ".gate", "r")
        except OSError:  # a lock file of an older kforge: plain flock
            self.gate = None
        self.held = 0  # 0 none, 1 shared, 2 exclusive

    def take(self, exclusive):
        f, want = self.fcntl, 2 if exclusive else 1
        if self.held == want:
            return
        if self.held == 2:  # a downgrade: nothing to queue behind
            f.flock(self.fd, f.LOCK_SH)
            self.held = 1
            return
        if self.held:  # never wait at the turnstile holding the lock
            f.flock(self.fd, f.LOCK_UN)
        if self.gate:
            f.flock(self.gate, f.LOCK_EX)
        f.flock(self.fd, f.LOCK_EX if exclusive else f.LOCK_SH)
        if self.gate:
            f.flock(self.gate, f.LOCK_UN)
        self.held = want

    def release(self):
        if self.held:
            self.fcntl.flock(self.fd, self.fcntl.LOCK_UN)
        self.held = 0


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
        self.lock_wait_s = 0.0  # calibration's and timed runs' waits for the device lock
        self.samples = []   # reservoir of timed runs whose outputs become files, kept until the end
        self.region = None  # shared pages for the child's outputs (shared_region)
        self.copies = {}    # the supervisor's reused copies of them, by slot (copied_outputs)
        self.kept_free = [] # copies of sampled runs the reservoir dropped, for the next sample
        self.writer = None  # the thread that writes check outputs (run_checks)
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
        """The device lock (docs/python-worker.md): shared for each command that computes
        references, checks, prepares or collects a run, exclusive from a timed or null run's cache flush to
        the end of its call, so that nothing else runs on the device while it is timed. Long
        CPU-bound phases (imports, torch.compile, inline builds) hold no lock. Opened after the
        fork: the child has no descriptor that could release it. Returns the seconds waited."""
        path = self.spec.get("lock_file")
        if not path:
            return 0.0
        if self.lock_handle is None:
            self.lock_handle = DeviceLock(path)
        t = time.perf_counter()
        self.lock_handle.take(exclusive)
        return time.perf_counter() - t

    def unlock(self):
        if self.lock_handle is not None:
            self.lock_handle.release()

    # The compile pass: the candidate's first call in a second process of the same candidate.
    def fork_compile_pass(self):
        """A JIT-compiling candidate (Triton, CuTe DSL) compiles its kernels at its first call,
        which would be its first check, under the shared device lock that every other job's
        timed runs wait behind: 50 new Triton candidates judged 8 at a time on an H200 queued
        6.2 s each for the lock. When the job asks for it (`compile_pass`, candidates on a GPU)
        and the candidate's Triton cache holds nothing yet, a second child of the same candidate
        is forked here, before the judged one. While the judged child starts and draws its
        inputs, that one makes the first call with its device work captured into a CUDA
        graph that is never launched (kforge_pychild.py cmd_compile_pass), holding no lock: the
        compile fills the candidate's own Triton cache, then the process is killed, with
        whatever state the call left in it. The judged child's first call finds the cache.
        Nothing of the pass is judged."""
        self.compile_helper = self.compile_thread = None
        self.compile_result = {}
        spec = self.spec
        if spec.get("mode") != "candidate" or not spec.get("compile_pass") or not spec.get("checks"):
            return
        cache = os.environ.get("TRITON_CACHE_DIR", "")
        try:
            if cache and os.listdir(cache):
                self.compile_result = {"skipped": "the candidate's Triton cache is filled"}
                return
        except OSError:
            pass
        helper = Supervisor(self.folder)
        try:
            helper.start_child()
        except Exception as e:  # no pass, then: the judged child's first call compiles
            self.compile_result = {"note": "not started: " + kforge_kernels.exception_line(e)}
            return
        self.compile_helper = helper

    def begin_compile_pass(self):
        helper = self.compile_helper
        if helper is None:
            return
        first, out = self.spec["checks"][0], self.compile_result

        def run():
            t0 = time.perf_counter()
            try:
                helper.call({"cmd": "init"})
                helper.call({"cmd": "setup", "sets": [first]})
                helper.call({"cmd": "load"})
                helper.call({"cmd": "build"})
                r = helper.call({"cmd": "compile_pass", "set": first})
                out["seconds"] = r.get("seconds")
                note = r.get("note") or r.get("skipped")
                if isinstance(note, str):
                    out["note"] = note[:300]
            except WorkerError as e:
                out["note"] = ("%s: %s" % (e.stage, e))[:300]
            except ChildGone:
                out["note"] = "the compile pass's process ended"
            except Exception as e:
                out["note"] = kforge_kernels.exception_line(e)
            finally:
                helper.end_child()
                out["wall_seconds"] = time.perf_counter() - t0

        self.compile_thread = threading.Thread(target=run, daemon=True)
        self.compile_thread.start()

    def join_compile_pass(self, kill=False):
        """Waits for the compile pass (before the judged child loads the candidate), or ends it."""
        thread = getattr(self, "compile_thread", None)
        if thread is None:
            if getattr(self, "compile_result", None) and not kill:
                self.res.data["compile_pass"] = self.compile_result
            return
        if kill:
            self.compile_helper.kill_child()
        else:
            self.stage("compile pass")
        # A first call that hangs only when captured (it waits on device work that never runs)
        # must not hang the job: the pass is ended and the judged child's first call compiles.
        thread.join(timeout=5 if kill else COMPILE_PASS_SECONDS)
        if thread.is_alive():
            self.compile_helper.kill_child()
            thread.join(timeout=5)
            self.compile_result.setdefault("note", "ended after %d s" % COMPILE_PASS_SECONDS)
        self.compile_thread = None
        out = self.compile_result
        self.child_seconds({"seconds": out.get("seconds")})
        self.res.data["compile_pass"] = {k: v for k, v in out.items() if k != "seconds"}

    # The child.
    def start_child(self):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:  # no ptrace, no /proc/<pid>/mem or fd/*
            raise WorkerError("worker", "prctl(PR_SET_DUMPABLE, 0) failed: errno %d" % ctypes.get_errno())
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_r, out_w = os.pipe()
        self.region = self.shared_region()
        sys.stdout.flush()
        sys.stderr.flush()
        me = os.getpid()
        pid = fork_patiently()
        if pid == 0:
            ours.close()
            os.close(out_r)
            child_main(self.spec, self.folder, theirs, out_w, me, self.region)
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

    def shared_region(self):
        """Shared pages the child hands its outputs over in (kforge-worker's hand-over too): as
        large as the largest set's outputs, mapped before the fork. None for jobs whose outputs
        are not known yet (a standby reference) or when the mapping fails: blobs then."""
        if self.spec.get("await_sets") or self.spec.get("mode") == "reference":
            return None
        largest = 0
        for s in self.spec.get("sets", []):
            largest = max(largest, sum(output_bytes(d) for d in s.get("outputs", [])))
        if largest == 0:
            return None
        try:
            return mmap.mmap(-1, largest, flags=mmap.MAP_SHARED)
        except (OSError, ValueError):
            return None

    def feed_outputs(self, r, expected, sinks, keep=False):
        """Each output of reply r to its sink, in CHUNK-byte pieces, after expect_outputs: off
        the channel, or from the shared region, copied out once before anything looks at the
        bytes (the child can write there at any time; what is checked is the copy). The copy
        goes into a buffer reused from run to run (a fresh 32 MiB one cost more in page faults
        than the copy), handed out read-only: every sink is done with it before the next run
        (one_run and run_checks wait for their scans); `keep`: a copy of their own the sinks may
        keep (kept_buffer), returned for the reservoir to give back when it drops the run."""
        sizes = self.expect_outputs(r, expected)
        if "shared" not in r:
            for n, sink in zip(sizes, sinks):
                self.chan.read_blob(n, sink)
            return None
        kept = self.kept_buffer(sum(sizes)) if keep else None
        for view, sink in zip(self.copied_outputs(sizes, into=kept), sinks):
            for piece in pieces_of(view):
                sink(piece)
        return kept

    def copied_outputs(self, sizes, slot=0, into=None):
        """The outputs in the shared region, copied out once into `into` (a sampled run's own
        buffer) or else reused buffer `slot`: a read-only view per output."""
        total = sum(sizes)
        buf = into
        if buf is None:
            buf = self.copies.get(slot)
            if buf is None or len(buf) < total:
                buf = self.copies[slot] = bytearray(total)
        # Through a memoryview: a bytearray's own slice assignment first copies a source that is
        # not a bytearray into a new one (CPython): 25-36 ms against 4.5-6.5 ms for 32 MiB in
        # this supervisor on the development VM.
        memoryview(buf)[:total] = memoryview(self.region)[:total]
        view = memoryview(buf)[:total].toreadonly()
        views, offset = [], 0
        for n in sizes:
            views.append(view[offset:offset + n])
            offset += n
        return views

    def kept_buffer(self, total):
        """A buffer for a sampled timed run's outputs: one that a run the reservoir dropped gave
        back (timed_loop; its scans were waited for before the run that replaced it started),
        else a new one. A fresh 32 MiB `bytes` a sample cost 19-24 ms in allocation, page faults
        and copy (Triton KernelBench runs on the H100, the development VM); about 6 of the
        first 10 timed runs are sampled."""
        for i, buf in enumerate(self.kept_free):
            if len(buf) >= total:
                return self.kept_free.pop(i)
        return bytearray(total)

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

    def await_sets(self):
        """A standby job (`await_sets`): started before the job it serves, with PyTorch imported
        and its device opened, it waits for the orchestrator's `sets.json` in its folder,
        {"sets": [...]} or {"cancel": true}, and gives the sets to the child. True when there
        is work."""
        path = os.path.join(self.folder, "sets.json")
        while not os.path.exists(path):
            time.sleep(0.005)
        with open(path) as f:
            msg = json.load(f)
        if msg.get("cancel") or not isinstance(msg.get("sets"), list):
            return False
        self.spec["sets"] = msg["sets"]
        self.call({"cmd": "sets", "sets": msg["sets"]})
        return True

    def child_seconds(self, reply):
        """Adds a reply's `seconds` (the child's own stopwatch over the steps of a command) to
        result.json's child_seconds: a diagnostic breakdown, never used to judge."""
        seconds = reply.get("seconds") if isinstance(reply, dict) else None
        if not isinstance(seconds, dict):
            return
        kept = self.res.data.setdefault("child_seconds", {})
        for k, v in list(seconds.items())[:32]:
            if isinstance(k, str) and len(k) <= 64 and isinstance(v, (int, float)) and not isinstance(v, bool):
                kept[k] = kept.get(k, 0.0) + float(v)

    def threads(self):
        return thread_count(self.pid)

    # The job.
    def run(self):
        spec, res = self.spec, self.res
        try:
            self.stage("start")
            self.fork_compile_pass()
            self.start_child()
            self.begin_compile_pass()
            init = None
            if spec.get("await_sets"):
                # The import and the device's context under the shared device lock: another
                # job's calibration and timed runs (exclusive) never overlap this start's CPU,
                # disk and driver work. The idle context then waits with the job.
                self.lock(exclusive=False)
                self.child_seconds(self.call({"cmd": "preload"}))
                init = self.call({"cmd": "init"})
                self.unlock()
                self.stage("standby")
                if not self.await_sets():
                    res.data["cancelled"] = True
                    self.finish()
                    return 0
            init = init or self.call({"cmd": "init"})
            self.child_seconds(init)
            res.data["fingerprint"] = init["fingerprint"]
            res.data["llc_bytes"] = init["llc_bytes"]
            if "shared_region_pinned" in init:
                res.data["shared_region_pinned"] = bool(init["shared_region_pinned"])
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
        self.join_compile_pass(kill=True)
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
        for i in range(len(self.spec["sets"])):
            self.stage("reference set %d" % i)
            self.lock(exclusive=False)  # for the set's call alone: another job's timed run waits for one set at most
            r = self.call({"cmd": "reference", "set": i})
            self.unlock()
            self.receive_files(r.get("files", []), r.get("blobs", []))
            res.data["sets"].append(r["desc"])
            res.save()

    def run_implementation(self):
        spec, res = self.spec, self.res
        timing = spec.get("timing")
        needed = sorted(set(spec.get("checks", [])) | set((timing or {}).get("sets", [])))
        self.stage("prepare")
        self.child_seconds(self.call({"cmd": "setup", "sets": needed}))
        # Before the calibration, so that the pass's compile (a busy core) is not in the
        # round trip the calibration measures.
        self.join_compile_pass()
        if timing:
            self.calibrate(timing["sets"])
        if spec["mode"] == "candidate":
            res.data["threads_before_load"] = self.threads()
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
            self.run_checks()
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
        slot = 0
        try:
            for n, i in enumerate(self.spec.get("checks", [])):
                entry = {"set": i}
                runs = ((0, "a"), (1, "b")) if twice else ((0, "a"),)
                for which, letter in runs:
                    self.stage("check set %d run %s" % (i, letter))
                    record = n == 0 and letter == "a" and self.spec["mode"] == "candidate"
                    # Shared for the call alone, so that another job's timed run waits for one
                    # check at most.
                    self.lock(exclusive=False)
                    r = self.call({"cmd": "check", "set": i, "which": which, "before": letter == "a",
                                   "after": letter == runs[-1][1], "record_kernels": record})
                    self.unlock()
                    if record:
                        res.data["kernels"] = kernels_record(r.get("kernels"))
                        self.child_seconds(r)
                    expected = self.spec["sets"][i]["outputs"]
                    names = ["out_%d_%s_%s.bin" % (i, letter, d["name"]) for d in expected]
                    if "shared" in r:
                        # Written and digested on a thread of their own while the child runs the
                        # next check: one write in flight, from one of two reused copies (a copy
                        # is reused two runs later, after its write was settled).
                        views = self.copied_outputs(self.expect_outputs(r, expected), slot=slot)
                        slot ^= 1
                        self.settle_check_files()
                        if self.writer is None:
                            from concurrent.futures import ThreadPoolExecutor
                            Scanner.submit(lambda: None)  # the scan pool made on this thread, once
                            self.writer = ThreadPoolExecutor(max_workers=1)
                        self.check_files = (self.writer.submit(write_files, self.folder, names, views), i, letter, expected, names)
                    else:
                        files = [FileSink(self.folder, name) for name in names]
                        self.feed_outputs(r, expected, files)
                        self.settle_check_files()
                        self.check_files = ([f.close() for f in files], i, letter, expected, names)
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
        finally:
            self.settle_check_files()  # every check file written so far is listed, however the checks end
        res.data["threads_after_checks"] = self.threads()
        res.save()

    def settle_check_files(self):
        """Waits for the check files being written (run_checks) and records their digests."""
        pending, self.check_files = getattr(self, "check_files", None), None
        if pending is None:
            return
        written, i, letter, expected, names = pending
        digests = written if isinstance(written, list) else written.result()
        for d, name, digest in zip(expected, names, digests):
            # The file's piece digest is the one timed outputs are told apart by (OutputProbe:
            # the same PIECE-byte pieces).
            self.res.data["files"][name] = digest
            self.check_digests.setdefault(d["name"], {}).setdefault(digest, "check run %d%s" % (i, letter))
            self.checked.setdefault((i, d["name"]), set()).add(digest)

    def expect_outputs(self, r, expected):
        """The child's outputs must be the expected ones, byte for byte in size (a trusted check
        of what the child's own shape check said); returns their sizes. Outputs in the shared
        region ("shared": the byte count) must fill exactly the start of it, with no blob."""
        got = r.get("outputs", [])
        shared = "shared" in r
        if shared and (self.region is None or "blobs" in r or not isinstance(got, list) or
                       any(not isinstance(g, dict) or not isinstance(g.get("nbytes"), int) for g in got)):
            raise WorkerError("run", "the child broke the protocol: outputs in a shared region it was not given, or with blobs")
        sizes = [g["nbytes"] for g in got] if shared else r.get("blobs", [])
        if len(got) != len(expected) or len(sizes) != len(expected):
            raise WorkerError("check", "returned %d outputs; the reference returns %d" % (len(got), len(expected)))
        for g, d, n in zip(got, expected, sizes):
            want = output_bytes(d)
            if g.get("name") != d["name"] or n != want or g.get("nbytes") != n:
                raise WorkerError("check", "output '%s' arrived as %d bytes; the reference's %s %s has %d" % (
                    d["name"], n, d["dtype"], d["dims"], want))
        if shared and (r["shared"] != sum(sizes) or sum(sizes) > len(self.region)):
            raise WorkerError("run", "the child broke the protocol: %r bytes in the shared region for outputs of %d"
                              % (r["shared"], sum(sizes)))
        return sizes

    # Timing.
    def one_run(self, j, seed, null, keep=False, flush=True, poison=0, settle=None):
        """prepare, flush, go, collect: one run of set j, its kf_run outputs filled with poison
        pattern `poison` (0 or 1; timed runs alternate them, as kforge-worker's do). The device
        lock is shared while the run is prepared and collected and exclusive from the cache flush
        to the end of the call, so runs of jobs judged side by side interleave and none is timed
        beside another's work. The supervisor's clock measures each step (prepare_ms includes
        the flush, none of them the lock's waits); wall_ms is from sending go to receiving done;
        lock_wait_s is what the run waited for the lock.

        The run's outputs are scanned on the Scanner's threads (OutputProbe). Without `settle`,
        one_run waits for those scans before it returns. The timed loop passes the previous
        run's settle_run instead: it is called once this run is prepared and the lock is let go,
        before the lock is taken exclusive, so the previous run's scans overlap this run's
        prepare and never its timed call."""
        ns = time.perf_counter_ns
        waited = self.lock(exclusive=False)
        t0 = ns()
        self.call({"cmd": "prepare", "set": j, "seed": seed, "null": null, "flush": False, "poison": poison})
        prepare = ns() - t0
        if settle is not None:
            self.unlock()  # nobody waits for the device behind a scan
            settle()
        waited += self.lock(exclusive=True)
        if flush:
            t0 = ns()
            self.call({"cmd": "flush"})
            prepare += ns() - t0
        t1 = ns()
        self.chan.send({"cmd": "go"})
        done = self.reply()
        t2 = ns()
        self.lock(exclusive=False)  # a downgrade never waits
        t3 = ns()
        r = self.call({"cmd": "collect"})
        replied = ns()
        self.unlock()
        expected = self.spec["sets"][j]["outputs"]
        kf_run = self.spec.get("entry") == "kf_run" and self.spec["mode"] == "candidate"
        probes = [(d["name"], OutputProbe(d["dtype"], POISON[d["dtype"]][poison] if kf_run else None, keep)) for d in expected]
        kept = self.feed_outputs(r, expected, [p for _, p in probes], keep=keep)
        t4 = ns()
        # collect_ms is the child's part of the hand-over: its round trip when the outputs came
        # through the shared region (the child is done with them when it replies), the whole
        # read when they came as blobs (the child still sends them). copy_ms is this process's
        # copy out of the shared region after the reply, which no work of the child's lengthens
        # (docs/python-worker.md, "What the orchestrator makes of the times").
        shared = "shared" in r
        run = {"set": j, "seed": seed, "wall_ms": (t2 - t1) / 1e6, "prepare_ms": prepare / 1e6,
               "collect_ms": ((replied if shared else t4) - t3) / 1e6, "copy_ms": ((t4 - replied) if shared else 0) / 1e6,
               "device_ms": float(done["device_ms"]),
               "host_ms": float(done["host_ms"]), "enqueue_ms": done.get("enqueue_ms"),
               "probes": probes, "buffer": kept, "overrun": r.get("overrun"),
               "inputs_changed": r.get("inputs_changed", []), "lock_wait_s": waited}
        if settle is None:
            self.settle_run(run)
        return run

    @staticmethod
    def settle_run(run):
        """Waits for the scans of a run's outputs; scan_ms: how long that wait took (the scans'
        time that no other step hid). The copy they read is reused by the next run's collect,
        which comes after this."""
        t0 = time.perf_counter_ns()
        for _, probe in run["probes"]:
            probe.result()
        run["scan_ms"] = (time.perf_counter_ns() - t0) / 1e6

    def fresh(self):
        """Whether timed runs get fresh inputs: always for KernelBench problems (the module's
        get_inputs), and for kforge problems whose timed sets carry every input's generator
        (`gen`, drawn by the child with kforge_inputs.py)."""
        if self.spec["problem"]["kind"] == "kernelbench":
            return True
        sets = (self.spec.get("timing") or {}).get("sets", [])
        return bool(sets) and all("gen" in d for j in sets for d in self.spec["sets"][j]["inputs"])

    def calibrate(self, sets):
        """Null runs through the same command path before the candidate is loaded, each locked as
        a timed run is (one_run): the round trip the wall clock adds (overhead_ms) and what preparing and
        collecting a run of these sizes costs when nothing moved work there."""
        self.stage("calibrate")
        # One null run first, its numbers dropped: what the command path does only once in a
        # process (CUDA loads each kernel it first uses, allocators grow) is paid before the
        # numbers count.
        self.one_run(sets[0], secrets.randbits(63) if self.fresh() else None, True)
        # As precise as the timing; the cache flush (hundreds of milliseconds on a large CPU
        # cache) only in every FLUSH_EVERY-th run, which alone calibrate preparing a run.
        n = min(NULL_RUNS, max(6, 2 * int(self.spec["timing"].get("min_runs", 10))))
        runs = [self.one_run(sets[k % len(sets)], secrets.randbits(63) if self.fresh() else None, True,
                             flush=k % FLUSH_EVERY == 0) for k in range(n)]
        self.lock_wait_s += sum(r["lock_wait_s"] for r in runs)
        med = statistics.median
        gaps = [r["wall_ms"] - r["device_ms"] for r in runs]
        overhead = med(gaps)
        self.calibration = {"null_runs": len(runs),
                            "overhead_ms": overhead,
                            "overhead_mad_ms": med([abs(g - overhead) for g in gaps]),
                            "wall_ms": med([r["wall_ms"] for r in runs]),
                            "device_ms": med([r["device_ms"] for r in runs]),
                            "prepare_ms": med([r["prepare_ms"] for k, r in enumerate(runs) if k % FLUSH_EVERY == 0]),
                            "collect_ms": med([r["collect_ms"] for r in runs]),
                            "copy_ms": med([r["copy_ms"] for r in runs]),
                            # Each null run's times: the orchestrator's baseline for the queued
                            # host-time gate (what a call that does nothing shows on this host).
                            "null_host_ms": [r["host_ms"] for r in runs],
                            "null_device_ms": [r["device_ms"] for r in runs]}
        if all(isinstance(r["enqueue_ms"], (int, float)) for r in runs):
            self.calibration["null_enqueue_ms"] = [float(r["enqueue_ms"]) for r in runs]

    def run_timing(self):
        spec, res = self.spec, self.res
        plan = spec["timing"]
        sets = plan["sets"]
        timing = {"overhead_ms": self.calibration["overhead_ms"],
                  "overhead_mad_ms": self.calibration["overhead_mad_ms"], "calibration": self.calibration,
                  "fresh_inputs": self.fresh(), **timing_series(), "threads_before": self.threads()}
        if not self.fresh():
            timing["note"] = ("timed runs rotate over the check trials' inputs (the job carries no input "
                              "generators to draw fresh ones from); each timed output is compared with its "
                              "set's checked output instead")
        self.stage("warm-up")
        self.lock(exclusive=False)
        self.call({"cmd": "warmup", "sets": sets, "runs": plan.get("warmup_runs", 3), "ms": plan.get("warmup_ms", 30)})
        self.stage("timed runs")
        before = self.call({"cmd": "input_states", "sets": sets})["states"]
        self.unlock()
        self.timed_loop(plan, timing)
        self.lock(exclusive=False)
        after = self.call({"cmd": "timing_end", "sets": sets})["states"]
        self.unlock()
        timing["lock_wait_s"] = self.lock_wait_s
        timing["threads_after"] = self.threads()
        timing["input_hashes_before"] = before
        timing["input_hashes_after"] = after
        res.data["timing"] = timing
        res.save()

    def timed_loop(self, plan, timing):
        sets, k_keep = plan["sets"], int(self.spec.get("timed_checks", 3))
        seen = {}  # output name -> {digest: "timed run N"} (the check runs' too)
        for name, digests in getattr(self, "check_digests", {}).items():
            seen[name] = dict(digests) if self.fresh() else {}
        start = time.perf_counter()
        waited = 0.0  # for the device lock: the budget is the job's own time on it
        k = 0
        previous = None  # (k, run) whose outputs are still being scanned
        timing["scan_ms"], timing["step_ms"] = [], []

        def settle(previous):
            """The previous run's scans waited for, and its outputs checked."""
            pk, prun = previous
            self.settle_run(prun)
            timing["scan_ms"].append(prun["scan_ms"])
            self.check_timed_outputs(pk, prun, seen, timing["issues"])

        step = time.perf_counter()
        while True:
            j = sets[k % len(sets)]
            seed = secrets.randbits(63) if self.fresh() else None
            slot = k if k < k_keep else secrets.randbelow(k + 1)  # reservoir sampling (algorithm R)
            run = self.one_run(j, seed, False, keep=slot < k_keep, poison=k % 2,
                               settle=(lambda p=previous: settle(p)) if previous else (lambda: None))
            previous = (k, run)
            for key in RUN_SERIES:
                timing[key].append(run[key])
            if isinstance(run["enqueue_ms"], (int, float)):
                timing["enqueue_ms"].append(float(run["enqueue_ms"]))
            timing["sets_used"].append(j)
            timing["seeds"].append(seed)
            timing["magnitudes"].append(self.spec["sets"][j].get("magnitude", 1.0))
            now = time.perf_counter()
            timing["step_ms"].append((now - step) * 1e3)
            step = now
            if slot < k_keep:
                run.update(run=k, magnitude=timing["magnitudes"][-1])
                if len(self.samples) < k_keep:
                    self.samples.append(run)
                else:
                    # The dropped run's copy serves a later sample: its scans are done (it
                    # was settled before this run started) and nothing reads its chunks again.
                    dropped = self.samples[slot].get("buffer")
                    if dropped is not None:
                        self.kept_free.append(dropped)
                    self.samples[slot] = run
            k += 1
            waited += run["lock_wait_s"]
            self.lock_wait_s += run["lock_wait_s"]
            elapsed = (time.perf_counter() - start - waited) * 1e3
            if k >= plan.get("max_runs", 300):
                break
            if k >= 3 and elapsed >= 2 * plan.get("budget_ms", 2000):  # kforge-worker's rule too
                break
            if k >= plan.get("min_runs", 10):
                # kforge-worker's rule over the same sample, the device times
                # (SetCoefficientOfVariation and SetMedianPrecision, src/base/stats.h): the
                # orchestrator bounds their median by this supervisor's wall clock
                # (TimingFromWorker, docs/evaluation.md section 3).
                device = timing["device_ms"]
                cv = set_cv(device, timing["sets_used"])
                if elapsed >= plan.get("budget_ms", 2000) or cv <= plan.get("cv_target", 0.02):
                    break
                target = plan.get("precision_target", 0.03)
                if target > 0 and set_median_precision(device, timing["sets_used"]) <= target:
                    break
        if previous:
            settle(previous)

    def check_timed_outputs(self, k, run, seen, issues):
        """Findings about timed run k's outputs, from the bytes received: fully written (kf_run),
        finite where the check references were, not a repeat of an earlier output."""
        spec = self.spec
        label = "timed run %d" % k if run["seed"] is None else "timed run %d (fresh inputs, seed %d)" % (k, run["seed"])
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
                # A few integers (a count, an argmax) may repeat for different inputs; floats may not.
                few_integers = probe.exp is None and probe.nbytes < 64 * ELEMENT_SIZE[probe.dtype]
                if not spec.get("degenerate", False) and not few_integers:
                    earlier = seen.setdefault(name, {}).get(digest)
                    if earlier:
                        found.append("%s: output '%s' is byte-identical to %s's (a skipped or cached call)"
                                     % (label, name, earlier))
                    seen[name].setdefault(digest, "timed run %d" % k)
            elif spec.get("deterministic", True):
                checked = getattr(self, "checked", {}).get((run["set"], name))
                if checked and digest not in checked:
                    found.append("%s: output '%s' differs from the checked output of set %d on the same inputs"
                                 % (label, name, run["set"]))
        for f in found:
            if len(issues) < 20:
                issues.append(f)


def kernels_record(record):
    """The child's kernels record (kforge_kernels.py) as it came, for the orchestrator to read
    (docs/worker-protocol.md); only its type and size are checked here."""
    if not isinstance(record, dict):
        return {"source": "torch.profiler", "available": False, "reason": "the child sent no kernels record"}
    if len(json.dumps(record)) > MAX_KERNELS_RECORD:
        return {"source": "torch.profiler", "available": False,
                "reason": "the child's kernels record is larger than %d bytes" % MAX_KERNELS_RECORD}
    return record


def set_cv(values, sets):
    """The root mean square over the input sets of each set's sample standard deviation over
    mean (1 for a set of one run): timed runs alternate between sets whose speeds may differ,
    and a pooled spread would never meet the target. src/base/stats.h has the same formula."""
    groups = {}
    for v, j in zip(values, sets):
        groups.setdefault(j, []).append(v)
    if len(values) < 2 or not groups:
        return 1.0
    sq = 0.0
    for g in groups.values():
        mean = statistics.fmean(g)
        cv = statistics.stdev(g) / mean if len(g) > 1 and mean > 0 else 1.0
        sq += cv * cv
    return (sq / len(groups)) ** 0.5


def fork_patiently(tries=8):
    """os.fork, tried again while it fails with EAGAIN: the sandbox user's process limit is
    shared by every sandbox on the machine (parallel tests, compiles), so a fork refused for a
    moment is the machine's state, not the job's. The C++ side does the same for compilers
    (eval/compiler.cc IsTransient)."""
    for attempt in range(tries):
        try:
            return os.fork()
        except BlockingIOError:
            if attempt == tries - 1:
                raise
            time.sleep(0.1 * (attempt + 1))


def median_precision(values):
    """Half the width of the median's distribution-free 95% confidence interval over the median,
    1 when the interval's ranks fall outside the sample: MedianPrecision in src/base/stats.h,
    which says why."""
    n = len(values)
    lo = _round_half_away(n / 2 - 0.98 * math.sqrt(n))
    hi = _round_half_away(1 + n / 2 + 0.98 * math.sqrt(n))
    if lo < 1 or hi > n:
        return 1.0
    v = sorted(values)
    median = statistics.median(v)
    if not median > 0:
        return 1.0
    return (v[hi - 1] - v[lo - 1]) / (2 * median)


def _round_half_away(x):
    """C's lround (halves away from zero), not Python's round (halves to even)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def set_median_precision(values, sets):
    """The root mean square over the input sets of median_precision (SetMedianPrecision)."""
    groups = {}
    for v, j in zip(values, sets):
        groups.setdefault(j, []).append(v)
    if not groups:
        return 1.0
    return (sum(median_precision(g) ** 2 for g in groups.values()) / len(groups)) ** 0.5


def run_job(folder):
    return Supervisor(folder).run()


# --- The warm worker (docs/python-worker.md "Warm workers"). ------------------------------------

PR_SET_CHILD_SUBREAPER = 36
ZYGOTE_TAG = "kforge-zygote "
ZYGOTE_OUT_KEEP = 64 << 10    # bytes of a job supervisor's stdout relayed
ZYGOTE_ERR_KEEP = 256 << 10   # bytes of the tail of its stderr relayed
ZYGOTE_REAP_SECONDS = 10      # a leftover process not reaped by then leaves the zygote unusable


def zygote_say(kind, obj):
    os.write(1, (ZYGOTE_TAG + kind + " " + json.dumps(obj, separators=(",", ":")) + "\n").encode())


def in_own_pid_namespace():
    """True when this process's PID namespace is not the orchestrator's (whose namespace the
    orchestrator names in KFORGE_OUTER_PIDNS): kill(-1) then reaches the sandbox's processes
    only, never another job's or the machine's."""
    outer = os.environ.get("KFORGE_OUTER_PIDNS", "")
    try:
        ours = os.readlink("/proc/self/ns/pid")
    except OSError:
        return False
    return bool(outer) and ours != outer


class LineReader:
    """Lines from a descriptor, read as they come (no buffering beyond what was read)."""

    def __init__(self, fd):
        self.fd, self.buf, self.eof = fd, b"", False

    def feed(self):
        data = os.read(self.fd, 1 << 16)
        if not data:
            self.eof = True
        self.buf += data

    def lines(self):
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            yield line


def wipe(folder, dev=None):
    """Empties a private tmpfs (/tmp, /var/tmp, /dev/shm) between jobs: nothing one job leaves
    there is seen by the next. Folders mounted into it from outside (the zygote's own folder, the
    caches, the device lock's folder) are on other file systems and are left alone: the
    orchestrator clears the zygote's folder itself."""
    try:
        if dev is None:
            dev = os.lstat(folder).st_dev
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if st.st_dev != dev:
                continue  # a mount point
            wipe(path, dev)
            try:
                os.rmdir(path)
            except OSError:
                pass
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def job_limits(limits):
    import resource
    for key, which in (("cpu_seconds", resource.RLIMIT_CPU), ("address_space_bytes", resource.RLIMIT_AS),
                       ("file_size_bytes", resource.RLIMIT_FSIZE)):
        value = int(limits.get(key) or 0)
        if value <= 0:
            continue
        _, hard = resource.getrlimit(which)
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        # CPU: SIGXCPU at the limit, SIGKILL a second later (as the sandbox does).
        new_hard = hard if which != resource.RLIMIT_CPU else (soft + 1 if hard == resource.RLIM_INFINITY else hard)
        resource.setrlimit(which, (soft, new_hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def triton_key_function():
    """Triton's triton_key (cached per process), where this Triton keeps it."""
    try:
        from triton.runtime.cache import triton_key  # Triton 3.6
    except ImportError:
        from triton.compiler.compiler import triton_key  # Triton 3.2
    return triton_key


def warm_triton(info):
    """What every job's first Triton call would otherwise do again, done once in the zygote before
    any job (each job forked from it inherits the result; no device is touched, no thread
    started): import Triton; compute triton_key, the hash of Triton's own sources and library
    that keys its compile cache (cached per process: 0.40 s of a warm job's first call on an
    H100 host with Triton 3.6, cache hit or not); import triton.experimental.gluon, which
    Triton 3.6's argument specialisation imports on a process's first call (0.17 s there).
    Records what it did in `info`."""
    try:
        import triton
    except Exception:
        return
    info["triton"] = triton.__version__
    t0 = time.perf_counter()
    try:
        triton_key_function()()
        info["triton_key_seconds"] = time.perf_counter() - t0
    except Exception as e:
        info["triton_key"] = "not computed ahead: " + kforge_kernels.exception_line(e)
    try:
        import triton.experimental.gluon  # noqa: F401
        info["triton_gluon"] = "imported"
    except ImportError:
        pass  # a Triton without it (3.2)
    except Exception as e:
        info["triton_gluon"] = "not imported: " + kforge_kernels.exception_line(e)


class Zygote:
    """A resident worker: Python started, PyTorch (and Triton) imported, no device touched. For
    each job it forks a fresh supervisor (which forks the candidate's child, as a cold job does),
    and after the supervisor has ended kills every other process of the sandbox and empties its
    temporary file systems, so that nothing of one job lives on into the next. Requests come on
    stdin, one JSON per line; results go out on stdout, which no job process holds."""

    def __init__(self):
        self.reader = LineReader(0)
        self.quit = False

    def start(self, preload):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 or libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return "prctl failed: errno %d" % ctypes.get_errno()
        if not in_own_pid_namespace():
            return "not in a PID namespace of its own (kill(-1) would reach processes outside the sandbox)"
        t0 = time.perf_counter()
        self.info = {"python": sys.version.split()[0]}
        # OpenBLAS (numpy's, imported by torch) starts its thread pool when it loads, one thread
        # per core: a process with threads must not be forked. One thread keeps the zygote
        # single-threaded; jobs do their numerical work in PyTorch's own pools, which start
        # lazily in each job's child.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            import torch
            self.info["torch"] = torch.__version__
        except Exception as e:
            return "PyTorch does not import: %s" % e
        if "triton" in preload:
            warm_triton(self.info)
        import kforge_inputs  # noqa: F401  (imported once, here; kforge_kernels is at the top)
        if torch.cuda.is_initialized():
            return "importing PyTorch initialised CUDA (a context cannot survive fork)"
        threads = thread_count(os.getpid())
        if threads > 1:
            names = {}
            for tid in os.listdir("/proc/self/task"):
                try:
                    with open("/proc/self/task/%s/comm" % tid) as f:
                        name = f.read().strip()
                except OSError:
                    name = "?"
                names[name] = names.get(name, 0) + 1
            return "the imports started %d threads (%s; fork would copy a process mid-work)" % (
                threads, ", ".join("%s x%d" % kv for kv in sorted(names.items())))
        self.info["import_seconds"] = time.perf_counter() - t0
        return None

    def next_request(self):
        while True:
            for line in self.reader.lines():
                try:
                    return json.loads(line)
                except ValueError:
                    continue
            if self.reader.eof:
                return None
            self.reader.feed()

    def serve(self):
        while True:
            req = self.next_request()
            if req is None:
                return 0
            if req.get("op") == "run":
                done = self.run_one(req)
                zygote_say("done", done)
                if done.get("unusable") or self.quit:
                    return 0

    def run_one(self, req):
        import resource
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        pid = fork_patiently()
        if pid == 0:
            code = 70
            try:
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                os.closerange(3, os.sysconf("SC_OPEN_MAX"))
                os.chdir(req["folder"])
                os.environ.clear()
                os.environ.update({str(k): str(v) for k, v in req.get("env", {}).items()})
                tempfile.tempdir = None
                job_limits(req.get("limits", {}))
                code = run_job(req["folder"])
            except BaseException:
                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                except BaseException:
                    pass
                os._exit(code)
        os.close(out_w)
        os.close(err_w)
        out, err, err_total = bytearray(), bytearray(), 0
        streams = {out_r: out, err_r: err}
        status, cancelled = None, False
        import select
        while status is None or streams:
            fds = list(streams) + ([0] if not self.reader.eof else [])
            ready, _, _ = select.select(fds, [], [], 0.05 if status is None else 1.0)
            if status is not None and not ready:
                break  # a descendant still holds a pipe: the kill below ends it
            for fd in ready:
                if fd == 0:
                    self.reader.feed()
                    for line in self.reader.lines():
                        try:
                            msg = json.loads(line)
                        except ValueError:
                            continue
                        if msg.get("op") == "cancel" and msg.get("id") == req.get("id"):
                            cancelled = True
                            self.kill_all()
                    if self.reader.eof:
                        self.quit = True
                        self.kill_all()
                    continue
                data = os.read(fd, 1 << 16)
                if not data:
                    os.close(fd)
                    del streams[fd]
                    continue
                if fd == err_r:
                    err_total += len(data)
                    err += data
                    if len(err) > 2 * ZYGOTE_ERR_KEEP:
                        del err[:-ZYGOTE_ERR_KEEP]
                elif len(out) < ZYGOTE_OUT_KEEP:
                    out += data[:ZYGOTE_OUT_KEEP - len(out)]
            if status is None:
                got, st = os.waitpid(pid, os.WNOHANG)
                if got == pid:
                    status = st
                    wall = time.perf_counter() - t0
        for fd in streams:
            os.close(fd)
        # Everything else of the job: killed, reaped (we are the subreaper), counted.
        leftovers, unreaped = self.kill_all(), False
        deadline = time.time() + ZYGOTE_REAP_SECONDS
        while True:
            try:
                got, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if got == 0:
                if time.time() > deadline:
                    unreaped = True
                    break
                time.sleep(0.002)
        for folder in ("/tmp", "/var/tmp", "/dev/shm"):
            wipe(folder)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = {"id": req.get("id"), "wall_seconds": wall, "out": bytes(out).decode("utf-8", "replace"),
                "err": bytes(err[-ZYGOTE_ERR_KEEP:]).decode("utf-8", "replace"), "err_total": err_total,
                "cpu_seconds": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                "max_rss_kb": after.ru_maxrss, "leftovers": leftovers, "cancelled": cancelled}
        if os.WIFSIGNALED(status):
            done["signal"] = os.WTERMSIG(status)
        else:
            done["exit_code"] = os.WEXITSTATUS(status)
        if unreaped:
            done["unusable"] = "a process of the job could not be reaped within %d s" % ZYGOTE_REAP_SECONDS
        return done

    def kill_all(self):
        """SIGKILL to every process this one may signal but itself: in the sandbox's PID namespace,
        every process of the job (the namespace's init is not ours to signal). kill(-1) reaches
        them at once, so a process forking meanwhile cannot slip through. Returns how many there
        were."""
        me = str(os.getpid())
        n = sum(1 for e in os.listdir("/proc") if e.isdigit() and e not in (me, "1"))
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        return n


def zygote(preload):
    z = Zygote()
    why = z.start(preload)
    if why:
        zygote_say("error", {"message": why})
        return 1
    zygote_say("ready", z.info)
    return z.serve()


def probe(modules=()):
    """What this interpreter can do: PyTorch and its devices, Triton, and each of `modules` (a
    backend's python_module, asked for only by that backend's judgements) as its version, or
    why it does not import as "<module>_error"."""
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
    import importlib
    for name in ("triton",) + tuple(m for m in modules if m != "triton"):
        try:
            module = importlib.import_module(name)
            info[name] = str(getattr(module, "__version__", "installed"))
        except Exception as e:
            info[name + "_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    # What the answer rests on, for the orchestrator to keep it while none of these changes
    # (python_worker.cc, ProbePython): the interpreter, each imported module's files, and every
    # folder on the import path (an install anywhere on it changes that folder).
    here = os.path.dirname(os.path.abspath(__file__))  # the job's own folder, gone after the probe
    files = [os.path.realpath(sys.executable)] + [p for p in sys.path if p and os.path.abspath(p) != here]
    for name in ("torch", "triton") + tuple(modules):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            files += [module.__file__, os.path.dirname(os.path.dirname(module.__file__))]
    version = sys.modules.get("torch.version")
    if version is not None and getattr(version, "__file__", None):
        files.append(version.__file__)
    # Every library the imports and CUDA's start loaded (libcuda: a driver upgraded without a
    # reboot; a CUDA runtime swapped under the same path).
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                path = fields[5].strip() if len(fields) == 6 else ""
                if path.startswith("/") and not path.startswith(("/dev/", "/proc/", "/sys/", here)) \
                        and not path.endswith("(deleted)"):
                    files.append(path)
    except OSError:
        pass
    info["_rests_on"] = sorted(set(os.path.abspath(f) for f in files))
    print(json.dumps(info))
    return 0


def main(argv):
    # Nothing a job makes is for another sandbox user to write (they share group nogroup); a
    # candidate's torch extension folder is lent to its job alone (python_worker.cc).
    os.umask(0o022)
    if len(argv) >= 2 and argv[1] == "probe":
        return probe(tuple(argv[2:]))
    if len(argv) == 3 and argv[1] == "run":
        return run_job(argv[2])
    if len(argv) >= 2 and argv[1] == "zygote":
        return zygote(argv[2:])
    print("usage: kforge_pyworker.py probe [module...] | run <folder> | zygote [torch] [triton]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
