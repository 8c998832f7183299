"""Tests of the child's input hashes (Child.hash in kforge_pychild.py) with the worker's real
PyTorch: each distinct value is hashed once, however many tensor objects show it.

Run: /usr/bin/python3 -m unittest kforge_pyhash_test (from python/), or ctest -R PyHashTest.
"""
import ctypes
import hashlib
import os
import time
import types
import unittest

try:
    import torch
except ImportError:  # the worker's interpreter has it; another one may not
    torch = None

import kforge_pychild


@unittest.skipIf(torch is None, "no PyTorch in this interpreter (scripts/setup installs the worker's)")
class HashTest(unittest.TestCase):
    def setUp(self):
        self.calls = 0
        real = kforge_pychild.tensor_hash

        def counting(t):
            self.calls += 1
            return real(t)
        kforge_pychild.tensor_hash = counting
        self.addCleanup(setattr, kforge_pychild, "tensor_hash", real)
        self.child = types.SimpleNamespace(hashes={}, hashed={})
        self.child.hash_many = lambda ts: kforge_pychild.Child.hash_many(self.child, ts)

    def hash(self, t):
        return kforge_pychild.Child.hash(self.child, t)

    def test_a_parameter_seen_through_new_objects_is_hashed_once(self):
        layer = torch.nn.Linear(64, 32)
        first = self.hash(layer.weight.data)
        for _ in range(5):  # p.data is a new tensor object at every access
            self.assertEqual(self.hash(layer.weight.data), first)
        self.assertEqual(self.calls, 1)

    def test_an_equal_copy_takes_the_hash_and_a_different_value_gets_its_own(self):
        x = torch.randn(16, 8)
        hx = self.hash(x)
        self.assertEqual(self.hash(x.clone()), hx)
        y = x.clone()
        y[3, 4] += 1.0
        hy = self.hash(y)
        self.assertNotEqual(hy, hx)
        self.assertEqual(self.calls, 2)
        want = hashlib.blake2b(y.numpy().tobytes(), digest_size=8).hexdigest()
        self.assertEqual(hy, want)

    def test_equal_bits_of_another_shape_or_dtype_are_hashed_apart(self):
        x = torch.zeros(4, 4)
        self.hash(x)
        self.hash(torch.zeros(16))
        self.hash(torch.zeros(4, 4, dtype=torch.float64))
        self.assertEqual(self.calls, 3)

    def test_many_tensors_at_once_each_distinct_value_hashed_once_in_order(self):
        xs = [torch.randn(256, 64) for _ in range(5)]
        weight = torch.nn.Linear(64, 64).weight
        batch = [xs[0], weight.data, xs[1], weight.data, xs[2], xs[3].clone(), xs[3], xs[4], weight.data]
        got = self.child.hash_many(batch)
        self.assertEqual(got, [kforge_pychild.tensor_hash(t) for t in batch])
        self.assertEqual(self.calls, 6 + len(batch))  # 6 distinct values; then the check's own calls
        self.assertEqual(self.child.hash_many([xs[2].clone(), weight.data]), [got[4], got[1]])
        self.assertEqual(self.calls, 6 + len(batch))  # nothing hashed again

    def test_given_nothing_it_hashes_nothing(self):
        self.assertEqual(self.child.hash_many([]), [])
        self.assertEqual(self.calls, 0)


def reference_digest(data, nbytes):
    """device_digest's formula in plain Python integers, from the bytes: the test's own account
    of what the torch operations must compute."""
    m = (1 << 64) - 1

    def mix(x):
        x ^= x >> 30
        x = (x * 0xbf58476d1ce4e5b9) & m
        x ^= x >> 27
        x = (x * 0x94d049bb133111eb) & m
        return x ^ (x >> 31)
    data = bytes(data) + bytes(-len(data) % 4)
    s1 = s2 = 0
    for i in range(len(data) // 4):
        x = (i << 32) | int.from_bytes(data[4 * i:4 * i + 4], "little")
        s1 = (s1 + mix(x)) & m
        s2 = (s2 + mix(x ^ 0x9e3779b97f4a7c15)) & m
    return "d%016x%016x%x" % (s1, s2, nbytes)


@unittest.skipIf(torch is None, "no PyTorch in this interpreter (scripts/setup installs the worker's)")
class DeviceDigestTest(unittest.TestCase):
    """device_digest (the hash of tensors on an accelerator) run here on the CPU: the same torch
    operations, so the same values."""

    def digest(self, t):
        return kforge_pychild.device_digest(t)

    def test_the_torch_operations_compute_the_documented_formula(self):
        for t in (torch.arange(-5, 7, dtype=torch.int32), torch.randn(37), torch.randn(5, dtype=torch.float64),
                  torch.tensor([1.5, -2.0, 3.25], dtype=torch.float16)):
            raw = t.contiguous().view(-1).view(torch.uint8).numpy().tobytes()
            self.assertEqual(self.digest(t), reference_digest(raw, len(raw)), str(t.dtype))

    def test_equal_contents_give_equal_digests_and_any_changed_word_a_different_one(self):
        t = torch.randn(3000)
        self.assertEqual(self.digest(t), self.digest(t.clone()))
        seen = {self.digest(t)}
        for i in (0, 1, 1499, 2999):
            u = t.clone()
            u[i] = torch.nextafter(u[i], torch.tensor(float("inf")))  # one bit of one word
            seen.add(self.digest(u))
        self.assertEqual(len(seen), 5)

    def test_words_swapped_between_positions_change_the_digest(self):
        t = torch.arange(100, dtype=torch.int32)
        u = t.clone()
        u[3], u[70] = t[70], t[3]
        self.assertNotEqual(self.digest(t), self.digest(u))

    def test_the_digest_does_not_depend_on_the_chunk_size(self):
        t = torch.randn(10007)
        whole = self.digest(t)
        real = kforge_pychild.DIGEST_CHUNK_WORDS
        self.addCleanup(setattr, kforge_pychild, "DIGEST_CHUNK_WORDS", real)
        for chunk in (1, 1000, 4096):
            kforge_pychild.DIGEST_CHUNK_WORDS = chunk
            self.assertEqual(self.digest(t), whole, chunk)

    def test_a_trailing_zero_half_word_is_not_the_padding(self):
        a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16)
        b = torch.tensor([1.0, 2.0, 3.0, 0.0], dtype=torch.float16)
        self.assertNotEqual(self.digest(a), self.digest(b))

    def test_views_that_start_mid_word_and_strided_views_hash_their_own_values(self):
        h = torch.arange(9, dtype=torch.float16)
        self.assertEqual(self.digest(h[1:]), self.digest(h[1:].clone()))
        m = torch.randn(6, 8)
        self.assertEqual(self.digest(m.t()), self.digest(m.t().contiguous()))
        self.assertNotEqual(self.digest(m.t()), self.digest(m))

    def test_tensor_hash_keeps_blake2b_for_tensors_on_the_cpu(self):
        t = torch.randn(64)
        expect = hashlib.blake2b(t.numpy().tobytes(), digest_size=8).hexdigest()
        self.assertEqual(kforge_pychild.tensor_hash(t), expect)



@unittest.skipIf(torch is None, "no PyTorch in this interpreter (scripts/setup installs the worker's)")
class OutputProbeTest(unittest.TestCase):
    """The supervisor's scan of output bytes (kforge_pyworker.OutputProbe): pieces read off a
    socket as Channel.read_blob hands them over, scanned on threads."""

    def setUp(self):
        import kforge_pyworker
        self.w = kforge_pyworker
        real = kforge_pychild.CHUNK
        kforge_pychild.CHUNK = 4096  # several pieces per output
        self.addCleanup(setattr, kforge_pychild, "CHUNK", real)

    def probe(self, array, dtype, poison=None, keep=False):
        import socket
        import threading
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        data = array.tobytes()
        sender = threading.Thread(target=a.sendall, args=(data,))
        sender.start()
        p = self.w.OutputProbe(dtype, poison, keep)
        kforge_pychild.Channel(b).read_blob(len(data), p)
        sender.join()
        return p

    def test_counts_and_digest_cover_every_piece(self):
        import numpy
        x = numpy.arange(5000, dtype=numpy.float32)
        x[[3, 2500, 4999]] = numpy.inf
        bits = numpy.uint32(0x7fc0dead)
        x.view(numpy.uint32)[[10, 4998]] = bits
        p = self.probe(x, "float32", poison=0x7fc0dead, keep=True)
        self.assertEqual(p.nbytes, x.nbytes)
        self.assertEqual(p.nonfinite, 5)  # the two poisoned elements are NaNs
        self.assertEqual(p.poisoned, 2)
        self.assertEqual(b"".join(p.chunks), x.tobytes())
        pieces = [hashlib.sha256(x.tobytes()[k:k + 4096]).digest() for k in range(0, x.nbytes, 4096)]
        self.assertEqual(p.digest(), hashlib.sha256(b"".join(pieces)).hexdigest())

    def test_equal_bytes_give_equal_digests_and_one_changed_element_another(self):
        import numpy
        x = numpy.random.default_rng(1).standard_normal(3000).astype(numpy.float64)
        y = x.copy()
        y[2999] = numpy.nextafter(y[2999], 10.0)
        self.assertEqual(self.probe(x, "float64").digest(), self.probe(x.copy(), "float64").digest())
        self.assertNotEqual(self.probe(x, "float64").digest(), self.probe(y, "float64").digest())

    def test_sixteen_bit_floats_are_scanned_by_their_exponent(self):
        import numpy
        h = numpy.zeros(3000, dtype=numpy.uint16)
        h[[0, 2999]] = 0x7c00  # +inf in float16
        self.assertEqual(self.probe(h, "float16").nonfinite, 2)



class SharedHandOverTest(unittest.TestCase):
    """Outputs the child wrote into the supervisor's shared region (kforge_pyworker's
    expect_outputs and feed_outputs, on a stand-in supervisor)."""

    def setUp(self):
        import mmap
        import kforge_pyworker
        self.w = kforge_pyworker
        self.sup = types.SimpleNamespace(region=mmap.mmap(-1, 64, flags=mmap.MAP_SHARED), chan=None, copies={})
        self.sup.copied_outputs = lambda sizes, slot=0, into=None: self.w.Supervisor.copied_outputs(self.sup, sizes, slot, into)
        self.expected = [{"name": "y", "dtype": "float32", "dims": [4]}, {"name": "z", "dtype": "int64", "dims": [2]}]

    def feed(self, reply, sinks):
        return self.w.Supervisor.feed_outputs(self.sup, reply, self.expected, sinks)

    def expect(self, reply):
        self.sup.expect_outputs = lambda r, e: self.w.Supervisor.expect_outputs(self.sup, r, e)
        return self.w.Supervisor.expect_outputs(self.sup, reply, self.expected)

    def test_the_sinks_get_the_supervisors_copy_made_before_they_look(self):
        self.sup.region[:32] = bytes(range(32))
        reply = {"shared": 32, "outputs": [{"name": "y", "nbytes": 16}, {"name": "z", "nbytes": 16}]}
        got = [[], []]
        region = self.sup.region

        def first(piece):  # the child writes again while the supervisor scans: too late
            region[:32] = bytes(32)
            got[0].append(bytes(piece))
        self.sup.expect_outputs = lambda r, e: self.w.Supervisor.expect_outputs(self.sup, r, e)
        self.feed(reply, [first, lambda p: got[1].append(bytes(p))])
        self.assertEqual(b"".join(got[0]), bytes(range(16)))
        self.assertEqual(b"".join(got[1]), bytes(range(16, 32)))

    def test_a_copy_in_one_slot_outlives_the_next_runs_copy_in_the_other(self):
        # run_checks writes run k's files from one slot while run k + 1 is copied into the other.
        self.sup.region[:32] = bytes(range(32))
        first = self.sup.copied_outputs([16, 16], slot=0)
        self.sup.region[:32] = bytes(range(100, 132))
        second = self.sup.copied_outputs([16, 16], slot=1)
        self.assertEqual([bytes(v) for v in first], [bytes(range(16)), bytes(range(16, 32))])
        self.assertEqual([bytes(v) for v in second], [bytes(range(100, 116)), bytes(range(116, 132))])
        self.assertTrue(first[0].readonly)

    def test_check_files_written_off_the_main_thread_are_named_by_their_piece_digest(self):
        import tempfile
        folder = tempfile.mkdtemp()
        data = [bytes(range(16)), bytes(range(200, 216))]
        digests = self.w.write_files(folder, ["out_0_a_y.bin", "out_0_a_z.bin"], [memoryview(d) for d in data])
        for name, d, digest in zip(["out_0_a_y.bin", "out_0_a_z.bin"], data, digests):
            with open(os.path.join(folder, name), "rb") as f:
                self.assertEqual(f.read(), d)
            self.assertEqual(digest, hashlib.sha256(hashlib.sha256(d).digest()).hexdigest())

    def test_outputs_in_a_region_it_was_not_given_break_the_protocol(self):
        self.sup.region = None
        with self.assertRaises(kforge_pychild.WorkerError):
            self.expect({"shared": 32, "outputs": [{"name": "y", "nbytes": 16}, {"name": "z", "nbytes": 16}]})

    def test_a_byte_count_that_is_not_the_outputs_breaks_the_protocol(self):
        with self.assertRaises(kforge_pychild.WorkerError):
            self.expect({"shared": 48, "outputs": [{"name": "y", "nbytes": 16}, {"name": "z", "nbytes": 16}]})
        with self.assertRaises(kforge_pychild.WorkerError):
            self.expect({"shared": 32, "blobs": [16, 16], "outputs": [{"name": "y", "nbytes": 16}, {"name": "z", "nbytes": 16}]})

    def test_outputs_of_the_wrong_size_are_refused(self):
        with self.assertRaises(kforge_pychild.WorkerError):
            self.expect({"shared": 24, "outputs": [{"name": "y", "nbytes": 8}, {"name": "z", "nbytes": 16}]})
        self.assertEqual(self.expect({"shared": 32, "outputs": [{"name": "y", "nbytes": 16}, {"name": "z", "nbytes": 16}]}), [16, 16])



class TimedLoopTest(unittest.TestCase):
    """The timed loop (Supervisor.timed_loop) on a stand-in supervisor whose one_run fakes the
    child: each run's scans are settled inside the next run, after its prepare and before its
    exclusive part, and the last run's outputs are checked too."""

    def setUp(self):
        import kforge_pyworker
        self.w = kforge_pyworker
        self.events = []
        self.outputs = {}  # run -> its bytes
        sup = types.SimpleNamespace(
            spec={"sets": [{"outputs": [{"name": "y", "dtype": "float32", "dims": [64]}]}], "problem": {"kind": "kforge"},
                  "timed_checks": 1},
            calibration={"overhead_ms": 0.0}, samples=[], lock_wait_s=0.0, check_digests={}, kept_free=[])
        sup.fresh = lambda: True
        sup.settle_run = self.w.Supervisor.settle_run
        sup.check_timed_outputs = lambda k, run, seen, issues: self.w.Supervisor.check_timed_outputs(sup, k, run, seen, issues)
        sup.one_run = self.one_run
        self.sup = sup
        self.k = 0
        self.buffers = []  # every kept buffer handed out, in order (held, so ids stay unique)

    def one_run(self, j, seed, null, keep=False, flush=True, poison=0, settle=None):
        k = self.k
        self.k += 1
        self.events.append("prepare %d" % k)
        self.assertIsNotNone(settle, "a timed run settles the previous one's scans")
        settle()
        self.events.append("exclusive %d" % k)
        probe = self.w.OutputProbe("float32", None, keep)
        data, buf = self.outputs.get(k, bytes([k % 256]) * 256), None
        if keep:  # copied into a buffer of its own, as feed_outputs does
            buf = self.w.Supervisor.kept_buffer(self.sup, len(data))
            self.buffers.append(buf)
            memoryview(buf)[:] = data
            data = buf
        probe(memoryview(data).toreadonly())
        return {"set": j, "seed": seed, "wall_ms": 1.0, "prepare_ms": 0.1, "collect_ms": 0.1, "copy_ms": 0.02, "device_ms": 1.0,
                "host_ms": 1.0, "enqueue_ms": 0.05, "probes": [("y", probe)], "buffer": buf, "overrun": None,
                "inputs_changed": [], "lock_wait_s": 0.0}

    def loop(self, runs):
        timing = self.w.timing_series()
        plan = {"sets": [0], "max_runs": runs, "min_runs": runs + 1, "budget_ms": 60000}
        self.w.Supervisor.timed_loop(self.sup, plan, timing)
        return timing

    def test_each_run_is_settled_after_the_next_ones_prepare_and_before_its_exclusive_part(self):
        checked = []
        real = self.sup.check_timed_outputs
        self.sup.check_timed_outputs = lambda k, run, seen, issues: (checked.append(k), self.events.append("checked %d" % k),
                                                                    real(k, run, seen, issues))
        timing = self.loop(3)
        self.assertEqual(self.events, ["prepare 0", "exclusive 0", "prepare 1", "checked 0", "exclusive 1",
                                       "prepare 2", "checked 1", "exclusive 2", "checked 2"])
        self.assertEqual(checked, [0, 1, 2])
        self.assertEqual(len(timing["scan_ms"]), 3)
        self.assertEqual(len(timing["step_ms"]), 3)
        self.assertEqual(timing["enqueue_ms"], [0.05] * 3)
        self.assertEqual(timing["copy_ms"], [0.02] * 3)
        self.assertEqual(timing["issues"], [])

    def test_the_samples_reservoir_drops_are_reused_and_every_kept_sample_holds_its_own_bytes(self):
        self.sup.spec["timed_checks"] = 3
        timing = self.loop(60)
        self.assertEqual(timing["issues"], [])
        self.assertGreater(len(self.buffers), 4, "more runs were sampled than the reservoir holds")
        self.assertLessEqual(len({id(b) for b in self.buffers}), 4, "at most one buffer beyond the three samples")
        self.assertEqual(len(self.sup.samples), 3)
        for run in self.sup.samples:
            _, probe = run["probes"][0]
            self.assertEqual(b"".join(bytes(c) for c in probe.chunks), bytes([run["run"] % 256]) * 256)

    def test_a_repeat_in_the_last_run_is_found(self):
        self.outputs[4] = bytes([0]) * 256  # run 4 hands back run 0's bytes
        timing = self.loop(5)
        self.assertEqual(len(timing["issues"]), 1)
        self.assertIn("timed run 4", timing["issues"][0])
        self.assertIn("byte-identical to timed run 0", timing["issues"][0])


class FileSinkTest(unittest.TestCase):
    """The digest the Python worker names its files by (FileSink) is PieceDigestHex's: the
    SHA-256 of the SHA-256 of each 1 MiB piece (src/base/files_test.cc checks the C++ side)."""

    def digest_by_definition(self, data):
        import kforge_pyworker
        piece = kforge_pyworker.PIECE
        return hashlib.sha256(b"".join(hashlib.sha256(data[k:k + piece]).digest()
                                       for k in range(0, len(data), piece))).hexdigest()

    def write(self, data, sizes):
        import tempfile
        import kforge_pyworker
        folder = tempfile.mkdtemp()
        sink = kforge_pyworker.FileSink(folder, "out.bin")
        at = 0
        for n in sizes:
            sink(memoryview(data[at:at + n]))
            at += n
        sink(memoryview(data[at:]))
        digest = sink.close()
        with open(folder + "/out.bin", "rb") as f:
            self.assertEqual(f.read(), data)
        return digest

    def test_the_digest_does_not_depend_on_how_the_bytes_arrive(self):
        import kforge_pyworker
        piece = kforge_pyworker.PIECE
        import random
        data = random.Random(7).randbytes(2 * piece + 12345)
        want = self.digest_by_definition(data)
        self.assertEqual(self.write(data, [piece, piece]), want)   # read_blob's pieces
        self.assertEqual(self.write(data, [1000, piece, 77]), want)  # anything else
        self.assertEqual(self.write(b"", []), hashlib.sha256(b"").hexdigest())
        self.assertEqual(self.write(data[:piece], []), self.digest_by_definition(data[:piece]))



class SpinPtxTest(unittest.TestCase):
    """The head start's kernel (SPIN_PTX) is plain PTX the driver compiles: ptxas, where the CUDA
    toolkit is installed, must accept it for the GPUs kforge runs on (no GPU needed)."""

    def test_ptxas_accepts_the_spin_for_ampere_and_hopper(self):
        import shutil
        import subprocess
        import tempfile
        ptxas = shutil.which("ptxas") or next((p for p in ("/usr/local/cuda/bin/ptxas",) if os.path.exists(p)), None)
        if ptxas is None:
            self.skipTest("no ptxas here (the CUDA toolkit is not installed)")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "spin.ptx")
            with open(path, "wb") as f:
                f.write(kforge_pychild.SPIN_PTX)
            for arch in ("sm_80", "sm_90"):
                r = subprocess.run([ptxas, "-arch=" + arch, "-v", path, "-o", os.devnull], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("kf_spin", r.stderr)
                # Few registers: every thread slot of an SM can hold a block of SPIN_BLOCK threads.
                regs = int(r.stderr.split("Used ")[1].split(" registers")[0])
                self.assertLessEqual(regs * 2048, 65536, r.stderr)



class FakeDriver:
    """libcuda's three calls DeviceSpin makes, recorded; `fail`: the call that returns an error."""

    def __init__(self, fail=None):
        self.calls, self.fail = [], fail

    def result(self, name):
        self.calls.append(name)
        return 700 if name == self.fail else 0

    def cuModuleLoadData(self, module, image):
        self.ptx = image.value
        module._obj.value = 0x1000
        return self.result("cuModuleLoadData")

    def cuModuleGetFunction(self, fn, module, name):
        self.module, self.name = module.value, name
        fn._obj.value = 0x2000
        return self.result("cuModuleGetFunction")

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launch = {"fn": fn.value, "grid": (gx.value, gy.value, gz.value), "block": (bx.value, by.value, bz.value),
                       "shared": shared.value, "stream": stream.value, "extra": extra,
                       "cycles": ctypes.cast(params[0], ctypes.POINTER(ctypes.c_longlong)).contents.value}
        return self.result("cuLaunchKernel")


def fake_torch(sms, slots, stream):
    props = types.SimpleNamespace(multi_processor_count=sms, max_threads_per_multi_processor=slots)
    cuda = types.SimpleNamespace(synchronize=lambda: None, get_device_properties=lambda index: props,
                                 current_stream=lambda: types.SimpleNamespace(cuda_stream=stream))
    return types.SimpleNamespace(cuda=cuda)


class DeviceSpinTest(unittest.TestCase):
    """The head start's launch through the driver, against a fake libcuda: the module from
    SPIN_PTX, kf_spin over every thread slot of every SM, on PyTorch's current stream."""

    def test_the_spin_takes_every_thread_slot_of_every_sm_on_the_current_stream(self):
        for sms, slots, blocks in ((132, 2048, 132 * 4), (84, 1536, 84 * 3)):
            driver = FakeDriver()
            spin = kforge_pychild.DeviceSpin(fake_torch(sms, slots, 0xBEEF), 0, cuda=driver)
            spin(123456)
            self.assertEqual(driver.ptx, kforge_pychild.SPIN_PTX)
            self.assertEqual((driver.module, driver.name), (0x1000, b"kf_spin"))
            launch = driver.launch
            self.assertEqual(launch["fn"], 0x2000)
            self.assertEqual(launch["grid"], (blocks, 1, 1))
            self.assertEqual(launch["block"], (kforge_pychild.SPIN_BLOCK, 1, 1))
            self.assertEqual(launch["grid"][0] * launch["block"][0], sms * slots)  # every thread slot
            self.assertEqual((launch["shared"], launch["stream"], launch["extra"]), (0, 0xBEEF, None))
            self.assertEqual(launch["cycles"], 123456)

    def test_a_driver_error_is_raised_for_set_queue_to_report(self):
        with self.assertRaisesRegex(RuntimeError, "cuModuleLoadData failed"):
            kforge_pychild.DeviceSpin(fake_torch(132, 2048, 0), 0, cuda=FakeDriver(fail="cuModuleLoadData"))
        spin = kforge_pychild.DeviceSpin(fake_torch(132, 2048, 0), 0, cuda=FakeDriver(fail="cuLaunchKernel"))
        with self.assertRaisesRegex(RuntimeError, "cuLaunchKernel"):
            spin(1000)


class FakeQueue:
    """A GPU's one queue in host time, for Device.timed_call: an event completes when the work
    queued before it has; the spin takes `cycles` at 1 GHz (1e6 cycles a millisecond)."""

    def __init__(self):
        self.busy_until = 0.0  # time.perf_counter() at which the queued work ends
        self.spins = 0
        self.extra_ms = 0.0  # a spin held back this much longer (as by a kernel of the candidate's)
        queue = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                self.at = max(time.perf_counter(), queue.busy_until)

            def elapsed_time(self, end):
                return (end.at - self.at) * 1e3

        def synchronize():
            while time.perf_counter() < queue.busy_until:
                pass

        self.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event, synchronize=synchronize))

    def spin(self, cycles):
        self.spins += 1
        self.busy_until = max(time.perf_counter(), self.busy_until) + cycles / 1e9 + self.extra_ms / 1e3


class TimedCallTest(unittest.TestCase):
    """What Device.timed_call reports for a call queued behind the head start, on a fake queue."""

    def device(self):
        self.queue = FakeQueue()
        dev = object.__new__(kforge_pychild.Device)
        dev.torch, dev.cuda, dev.queue_cycles, dev.spin = self.queue.torch, True, 5_000_000, self.queue.spin
        dev.queue_ms = 5.0
        return dev

    def test_a_queued_calls_host_time_leaves_out_the_head_start(self):
        dev = self.device()
        devices = []
        for _ in range(5):
            t0 = time.perf_counter()
            _, device_ms, host_ms = dev.timed_call(lambda: None, queued=True)
            wall = (time.perf_counter() - t0) * 1e3
            self.assertGreaterEqual(wall, 4.99, "the call waits behind the 5 ms head start")
            devices.append(device_ms)
            # Its wall time holds the spin and its host time must not: they differ by the spin at
            # least, whatever the scheduler adds to either (the fake's synchronize returned 3 ms
            # late on a loaded machine).
            self.assertGreaterEqual(wall - host_ms, 4.99, f"host time {host_ms} ms holds the head start")
        self.assertEqual(self.queue.spins, 5)
        self.assertLess(sorted(devices)[2], 0.1)

    def test_only_the_head_starts_own_length_is_left_out(self):
        # A spin held back 4 ms longer (a kernel of the candidate's on another stream, or work it
        # queued ahead of the start event): at most 1.25 head starts (6.25 of 9 ms) are left out.
        dev = self.device()
        self.queue.extra_ms = 4.0
        _, _, host_ms = dev.timed_call(lambda: None, queued=True)
        self.assertGreaterEqual(host_ms, 2.5)

    def test_an_unqueued_call_spins_not(self):
        dev = self.device()
        dev.timed_call(lambda: None, queued=False)
        self.assertEqual(self.queue.spins, 0)


if __name__ == "__main__":
    unittest.main()
