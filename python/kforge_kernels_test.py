"""Tests of the kernels record (kforge_kernels.py) on fake profiler events: no torch, no GPU.

Run: python3 -m unittest kforge_kernels_test (from python/), or ctest -R PyKernelRecord.
"""
import ctypes
import os
import unittest

from kforge_kernels import (CLOCK_SLACK_NS, MAX_RECORDS, CuptiRecorder, KernelEvent, cupti_candidates, decode_activity, demangle,
                            group_events, new_recorder, split_probe, trace_events)

MS = 1000000  # nanoseconds


def kernel(name, start_ms, end_ms, stream=7, graph=False):
    return KernelEvent("kernel", name, int(start_ms * MS), int(end_ms * MS), stream, graph, 0)


class GroupEventsTest(unittest.TestCase):
    def test_given_repeated_kernels_it_groups_them_by_name_longest_first(self):
        events = [kernel("gemm_kernel(float const*, float*, int)", 0, 1.0),
                  kernel("void at::native::vectorized_elementwise_kernel<4>(int)", 1.0, 1.1),
                  kernel("gemm_kernel(float const*, float*, int)", 1.1, 2.1, stream=13),
                  kernel("gemm_kernel(float const*, float*, int)", 2.1, 3.1)]
        r = group_events(events, returned_ns=10 * MS, call="check set 0", window_ms=3.5)
        self.assertEqual(r["source"], "torch.profiler")
        self.assertTrue(r["available"])
        self.assertEqual(r["call"], "check set 0")
        self.assertEqual(r["window_ms"], 3.5)
        self.assertEqual([x["name"] for x in r["records"]],
                         ["gemm_kernel(float const*, float*, int)", "void at::native::vectorized_elementwise_kernel<4>(int)"])
        gemm = r["records"][0]
        self.assertEqual(gemm["calls"], 3)
        self.assertAlmostEqual(gemm["device_ms"], 3.0)
        self.assertEqual(gemm["streams"], [7, 13])
        self.assertFalse(gemm["graph"])
        self.assertEqual(gemm["after_return"], 0)
        self.assertEqual(set(gemm), {"name", "calls", "device_ms", "streams", "graph", "after_return"})
        self.assertEqual(r["memcpy"], {"count": 0, "device_ms": 0.0, "bytes": 0})

    def test_given_kernels_still_running_when_the_call_returned_it_counts_them(self):
        events = [kernel("k", 0, 1), kernel("k", 1, 2.5), kernel("k", 2.5, 4)]
        r = group_events(events, returned_ns=2 * MS, call="check set 0", window_ms=4)
        self.assertEqual(r["records"][0]["after_return"], 2)

    def test_given_a_graph_launch_the_name_is_marked_as_a_graphs(self):
        r = group_events([kernel("k", 0, 1), kernel("k", 1, 2, graph=True)], 5 * MS, "check set 0", 2)
        self.assertTrue(r["records"][0]["graph"])
        self.assertEqual(r["records"][0]["calls"], 2)

    def test_given_copies_and_memsets_they_are_counted_apart_from_kernels(self):
        events = [KernelEvent("memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 10000, 7, False, 4000),
                  KernelEvent("memset", "Memset (Device)", 20000, 21000, 7, False, 96), kernel("k", 0.1, 0.2)]
        r = group_events(events, MS, "check set 0", 1)
        self.assertEqual(r["memcpy"], {"count": 2, "device_ms": 0.011, "bytes": 4096})
        self.assertEqual([x["name"] for x in r["records"]], ["k"])

    def test_given_no_events_the_record_is_available_and_empty(self):
        r = group_events([], MS, "check set 0", 1)
        self.assertTrue(r["available"])
        self.assertEqual(r["records"], [])

    def test_given_more_names_than_it_keeps_it_keeps_the_longest_and_counts_the_rest(self):
        events = [kernel("k%d" % i, 0, 0.001 * (i + 1)) for i in range(MAX_RECORDS + 5)]
        r = group_events(events, MS, "check set 0", 1)
        self.assertEqual(len(r["records"]), MAX_RECORDS)
        self.assertEqual(r["records_left_out"], 5)
        self.assertEqual(r["records"][0]["name"], "k%d" % (MAX_RECORDS + 4))


# As torch 2.11 (Kineto, CUPTI 13) exported it on an H200, cut down to the fields read.
BASE = 1790857026000000000
TRACE = {
    "baseTimeNanoseconds": BASE,
    "traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 5272193895700.0, "dur": 5.0,
         "args": {"correlation": 1357}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 5272193895800.0, "dur": 5.0,
         "args": {"correlation": 1403}},
        {"ph": "X", "cat": "kernel", "name": "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_cublas", "ts": 5272193893085.766,
         "dur": 2692.749, "args": {"stream": 7, "correlation": 1357, "device": 0}},
        {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int)",
         "ts": 5272193895815.987, "dur": 10.048, "args": {"stream": 7, "correlation": 1403}},
        {"ph": "X", "cat": "kernel", "name": "tk", "ts": 5272193895862.867, "dur": 6.72,
         "args": {"stream": 13, "correlation": 1409}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 5272193895870.387,
         "dur": 0.96, "args": {"stream": 7, "correlation": 1427, "bytes": 4000}},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "forward", "ts": 5272193893000.0, "dur": 3000.0, "args": {}},
        {"ph": "f", "cat": "ac2g", "id": 1357, "ts": 5272193895700.0},
        {"name": "process_name", "ph": "M", "ts": 5272168349878.025, "args": {"name": "python3"}},
    ],
}


class TraceEventsTest(unittest.TestCase):
    def test_given_a_kineto_trace_it_reads_kernels_and_copies_on_the_host_clock(self):
        events = trace_events(TRACE)
        self.assertEqual([e.kind for e in events], ["kernel", "kernel", "kernel", "memcpy"])
        gemm = events[0]
        self.assertEqual(gemm.start_ns, 1796129219893085766)
        self.assertEqual(gemm.end_ns - gemm.start_ns, 2692749)
        self.assertEqual(gemm.stream, 7)
        self.assertFalse(gemm.graph)
        self.assertTrue(events[1].graph)  # correlated with cudaGraphLaunch
        self.assertEqual(events[2].name, "tk")
        self.assertEqual(events[2].stream, 13)
        self.assertEqual(events[3].nbytes, 4000)

    def test_given_an_older_trace_without_a_base_time_stamps_are_absolute(self):
        old = {"traceEvents": [{"ph": "X", "cat": "Kernel", "name": "k", "ts": 1796129219893085.766, "dur": 1.5,
                                "args": {"stream": 7}},
                               {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "ts": 1796129219893090.0,
                                "dur": 1.0, "args": {"stream": 7, "bytes": 64}}]}
        events = trace_events(old)
        self.assertEqual([e.kind for e in events], ["kernel", "memset"])
        self.assertEqual(events[0].start_ns // 1000, 1796129219893085)


class SplitProbeTest(unittest.TestCase):
    def test_given_the_probe_inside_its_host_bracket_it_is_taken_out(self):
        probe, rest = split_probe([kernel("probe", 1.0, 1.01), kernel("k", 2, 3)], 1 * MS - 5000, 1.02 * MS)
        self.assertEqual(probe.name, "probe")
        self.assertEqual([e.name for e in rest], ["k"])

    def test_given_a_first_event_outside_the_bracket_the_clocks_disagree(self):
        events = [kernel("probe", 50, 50.01), kernel("k", 51, 52)]
        probe, rest = split_probe(events, 1 * MS, 1 * MS + 30000)
        self.assertIsNone(probe)
        self.assertEqual(rest, events)
        self.assertIsNone(split_probe([], 0, CLOCK_SLACK_NS)[0])


def record(fields, size=200):
    """A fake CUPTI activity record: {offset: (ctype, value)} written into a zeroed buffer."""
    b = ctypes.create_string_buffer(size)
    for off, (t, v) in fields.items():
        t.from_buffer(b, off).value = v
    return b


class DecodeActivityTest(unittest.TestCase):
    """The offsets are CUpti_ActivityKernel10's and Memcpy6's / Memset4's, the ones
    src/backend/cuda/cupti.h static_asserts against the CUDA headers."""

    def test_given_a_kernel_record_it_reads_name_times_stream_and_graph(self):
        name = ctypes.create_string_buffer(b"_Z9my_kernelPfi")
        b = record({0: (ctypes.c_int32, 10), 16: (ctypes.c_uint64, 1000), 24: (ctypes.c_uint64, 2500),
                    48: (ctypes.c_uint32, 13), 104: (ctypes.c_void_p, ctypes.addressof(name))})
        e = decode_activity(ctypes.addressof(b))
        self.assertEqual(e, KernelEvent("kernel", "my_kernel(float*, int)", 1000, 2500, 13, False, 0))

    def test_given_mangled_names_they_read_as_the_profiler_showed_them(self):
        self.assertEqual(demangle("_Z21gemm_mul_leaky_kernelPKfS0_S0_Pfiiiff"),
                         "gemm_mul_leaky_kernel(float const*, float const*, float const*, float*, int, int, int, float, float)")
        self.assertTrue(demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_"
                                 "internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_").startswith(
                                     "void at::native::vectorized_elementwise_kernel<4, "))
        self.assertEqual(demangle("gemm_epilogue"), "gemm_epilogue")  # Triton's: not C++
        self.assertEqual(demangle("_Zgarbage"), "_Zgarbage")

    def test_given_a_graph_node_id_the_kernel_is_a_graphs(self):
        name = ctypes.create_string_buffer(b"k")
        b = record({0: (ctypes.c_int32, 10), 104: (ctypes.c_void_p, ctypes.addressof(name)), 144: (ctypes.c_uint64, 77)})
        self.assertTrue(decode_activity(ctypes.addressof(b)).graph)
        b = record({0: (ctypes.c_int32, 10), 156: (ctypes.c_uint32, 3)})
        e = decode_activity(ctypes.addressof(b))
        self.assertTrue(e.graph)
        self.assertEqual(e.name, "?")  # no name pointer

    def test_given_copies_and_memsets_it_reads_their_bytes(self):
        copy = record({0: (ctypes.c_int32, 1), 8: (ctypes.c_uint64, 4096), 16: (ctypes.c_uint64, 10),
                       24: (ctypes.c_uint64, 30), 40: (ctypes.c_uint32, 7)})
        self.assertEqual(decode_activity(ctypes.addressof(copy)), KernelEvent("memcpy", "", 10, 30, 7, False, 4096))
        fill = record({0: (ctypes.c_int32, 2), 8: (ctypes.c_uint64, 64), 72: (ctypes.c_uint32, 1)})
        e = decode_activity(ctypes.addressof(fill))
        self.assertEqual((e.kind, e.nbytes, e.graph), ("memset", 64, True))

    def test_given_another_kind_it_is_left_out(self):
        self.assertIsNone(decode_activity(ctypes.addressof(record({0: (ctypes.c_int32, 5)}))))


class CuptiCandidatesTest(unittest.TestCase):
    def test_given_a_mapped_libcupti_it_comes_first_and_once(self):
        maps = ("7f00-7f10 r-xp 00000000 08:01 1 /venv/nvidia/cu13/lib/libcupti.so.13\n"
                "7f10-7f20 r--p 00010000 08:01 1 /venv/nvidia/cu13/lib/libcupti.so.13\n"
                "7f20-7f30 r-xp 00000000 08:01 2 /usr/lib/libc.so.6\n"
                "7f30-7f40 rw-p 00000000 00:00 0\n")
        env = os.environ.pop("KFORGE_CUPTI", None)
        try:
            self.assertEqual(cupti_candidates(maps), ["/venv/nvidia/cu13/lib/libcupti.so.13"])
            os.environ["KFORGE_CUPTI"] = "/opt/cupti/libcupti.so"
            self.assertEqual(cupti_candidates(maps)[-1], "/opt/cupti/libcupti.so")
        finally:
            os.environ.pop("KFORGE_CUPTI", None)
            if env is not None:
                os.environ["KFORGE_CUPTI"] = env

    def test_given_nothing_mapped_and_no_wheels_there_is_no_candidate(self):
        env = os.environ.pop("KFORGE_CUPTI", None)
        try:
            self.assertEqual(cupti_candidates("", torch_dir="/nonexistent/torch"), [])
        finally:
            if env is not None:
                os.environ["KFORGE_CUPTI"] = env


class NoCuptiTest(unittest.TestCase):
    """Without libcupti (this machine's Debian torch has none) the CUPTI recorder says so, and
    new_recorder falls back to torch.profiler, whose failure is reported with both reasons."""

    def test_given_no_libcupti_the_cupti_recorder_says_why_and_the_fallback_is_tried(self):
        class NoTorch:
            __file__ = "/nonexistent/torch/__init__.py"
        env = os.environ.pop("KFORGE_CUPTI", None)
        try:
            r = CuptiRecorder(NoTorch(), "check set 0")
            if any(os.path.basename(p).startswith("libcupti") for p in cupti_candidates()):
                self.skipTest("this process has a libcupti")
            self.assertIn("no libcupti", r.start())
            recorder, why = new_recorder(NoTorch(), "check set 0")
            self.assertIsNone(recorder)
            self.assertIn("no libcupti", why)
            self.assertIn("torch.profiler did not start", why)
        finally:
            if env is not None:
                os.environ["KFORGE_CUPTI"] = env


if __name__ == "__main__":
    unittest.main()
