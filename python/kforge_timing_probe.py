"""What a Python job's timed call measures for a small kernel, step by step (a benchmark
program, not a test; trusted code only: it runs a bundled seed, never a candidate).

The child times a run as kforge_pychild.Device.timed_call does: a CUDA event, the call, an
event, a synchronize. For a kernel of a few microseconds that number is mostly what happens
between the two events on the host: the Python call, Triton's launcher, the seed's
torch.manual_seed. This program times the same call in the conditions a timed run meets and
prints, per condition, the median and the spread of the events' time, so that the part that is
the kernel and the part that is the launch path can be told apart:

  back-to-back     the call again and again, nothing in between
  after flush      the child's cache flush (a fill of twice the L2, then a synchronize) first
  after idle       a flush, then 10 ms of host sleep (the supervisor's scans, another job's run)
  no manual_seed   as "after flush", without the torch.manual_seed the child ran in the call
  0.1 ms wait      a flush, then 0.1 ms of host sleep (the child waiting for "go"), no seed
  idle, then spin  after idle, 2 ms of host busy loop before the call (a core kept awake), no seed
  idle, then op    after idle, a one-element op and a synchronize before the call, no seed
  idle, no seed    after idle, no seed
  queued, flush    as "after flush", no seed, through the child's timed call with the device's
                   head start (kforge_pychild.QUEUE_MS of spin queued before the events)
  queued, idle     the same after idle; "its launches" lines: the host's time from the first
                   event to the last, which the head start has to cover
  device only      100 calls between one pair of events, divided by 100: the launch overlapped

and the cost of the supervisor's steps for the output: an 8 MiB copy from the device into
pageable and into page-locked host pages, SHA-256 of 8 MiB in one piece and in 1 MiB pieces on
a thread pool.

Usage: python3 kforge_timing_probe.py [--kernel problems/gelu/seeds/naive_triton.py] [--n 2097152]
"""
import argparse
import hashlib
import importlib.util
import mmap
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor


def summary(name, ms):
    med = statistics.median(ms)
    cv = statistics.pstdev(ms) / med if med > 0 else 0.0
    q = sorted(ms)
    print("%-16s median %8.4f ms  p10 %8.4f  p90 %8.4f  cv %5.1f%%  (%d runs)"
          % (name, med, q[len(q) // 10], q[9 * len(q) // 10], 100 * cv, len(ms)), flush=True)


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--kernel", default=os.path.join(here, "..", "problems", "gelu", "seeds", "naive_triton.py"))
    ap.add_argument("--n", type=int, default=2097152)
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("kforge_timing_probe: no CUDA device; it measures the timed call on one")
    spec = importlib.util.spec_from_file_location("probe_kernel", args.kernel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dev = torch.device("cuda:0")
    x = torch.randn(args.n, device=dev)
    y = torch.empty_like(x)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush_buf = torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.float32, device=dev)

    def call(seed=True):
        if seed:
            torch.manual_seed(1234)
        mod.kf_run({"x": x}, {"y": y}, {"n": args.n})

    def flush():
        flush_buf.fill_(1.0)
        torch.cuda.synchronize()

    def timed(before, seed=True):
        ms = []
        for _ in range(args.runs):
            before()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            call(seed)
            b.record()
            torch.cuda.synchronize()
            ms.append(a.elapsed_time(b))
        return ms

    for _ in range(20):
        call()
    torch.cuda.synchronize()
    print("kforge_timing_probe: %s, n=%d, %s, torch %s" % (os.path.basename(args.kernel), args.n,
                                                          torch.cuda.get_device_name(0), torch.__version__))
    summary("back-to-back", timed(lambda: None))
    summary("after flush", timed(flush))
    summary("after idle", timed(lambda: (flush(), time.sleep(0.01))))
    summary("no manual_seed", timed(flush, seed=False))
    tiny = torch.zeros(1, device=dev)

    def spin(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
    summary("0.1 ms wait", timed(lambda: (flush(), time.sleep(0.0001)), seed=False))
    summary("idle, then spin", timed(lambda: (flush(), time.sleep(0.01), spin(0.002)), seed=False))
    summary("idle, then op", timed(lambda: (flush(), time.sleep(0.01), tiny.add_(1.0), torch.cuda.synchronize()), seed=False))
    summary("idle, no seed", timed(lambda: (flush(), time.sleep(0.01)), seed=False))
    # The child's own timed call (kforge_pychild.Device.timed_call), queued behind its head start.
    import kforge_pychild
    device = kforge_pychild.Device("cuda:0")
    device.set_queue(kforge_pychild.QUEUE_MS)

    def queued(before):
        ms, enqueue = [], []
        for _ in range(args.runs):
            before()
            _, d, _ = device.timed_call(lambda: call(False), queued=True)
            ms.append(d)
            enqueue.append(device.last_enqueue_ms)
        return ms, enqueue
    for name, before in (("queued, flush", flush), ("queued, idle", lambda: (flush(), time.sleep(0.01)))):
        ms, enqueue = queued(before)
        summary(name, ms)
        summary("  its launches", enqueue)
    print("(head start %.3f ms: %d cycles)" % (device.queue_ms, device.queue_cycles))
    many = []
    for _ in range(20):
        flush()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(100):
            call(False)
        b.record()
        torch.cuda.synchronize()
        many.append(a.elapsed_time(b) / 100)
    summary("device only", many)
    host = []
    for _ in range(args.runs):
        flush()
        h0 = time.perf_counter()
        call()
        host.append((time.perf_counter() - h0) * 1e3)
        torch.cuda.synchronize()
    summary("host call", host)

    # The supervisor's side of one run's output.
    nbytes = y.numel() * y.element_size()
    region = mmap.mmap(-1, nbytes, flags=mmap.MAP_SHARED)
    dst = torch.frombuffer(region, dtype=torch.uint8, count=nbytes)
    src = y.view(torch.uint8)

    def copies():
        ms = []
        for _ in range(50):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            dst.copy_(src)
            ms.append((time.perf_counter() - t0) * 1e3)
        return ms
    summary("D2H pageable", copies())
    err = torch.cuda.cudart().cudaHostRegister(dst.data_ptr(), -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE, 0)
    print("cudaHostRegister: %s" % (err,))
    summary("D2H page-locked", copies())
    data = bytes(region)
    summary("sha256 8 MiB", [timeit(lambda: hashlib.sha256(data).digest()) for _ in range(30)])
    pool = ThreadPoolExecutor(max_workers=8)
    mv = memoryview(data)
    piece = 1 << 20
    summary("sha256 1MiB x8", [timeit(lambda: list(pool.map(lambda k: hashlib.sha256(mv[k:k + piece]).digest(),
                                                             range(0, len(mv), piece)))) for _ in range(30)])
    buf = bytearray(nbytes)
    summary("host copy 8 MiB", [timeit(lambda: buf.__setitem__(slice(0, nbytes), region)) for _ in range(30)])


def timeit(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


if __name__ == "__main__":
    main()
