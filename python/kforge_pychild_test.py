"""Tests of kforge_pychild.construct (how models are built) with a stand-in torch: no torch, no
GPU, so CI exercises the device path that only a GPU run takes otherwise.

Run: python3 -m unittest kforge_pychild_test (from python/), or ctest -R PyConstructTest.
"""
import sys
import types
import unittest


class FakeTorch(types.ModuleType):
    """torch.device (a context manager from torch 2.0, as `context` says), torch.manual_seed, and
    a log of what happened in which order."""

    def __init__(self, context=True):
        super().__init__("torch")
        self.log = []
        self.inside = None
        fake = self

        class Device:
            def __init__(self, spec):
                self.type = spec.split(":")[0]
                self.spec = spec

            def __repr__(self):
                return self.spec

        if context:
            def enter(dev):
                fake.inside = dev.spec
                fake.log.append("enter " + dev.spec)
                return dev

            def leave(dev, *exc):
                fake.inside = None
                fake.log.append("exit " + dev.spec)
                return False
            Device.__enter__ = enter
            Device.__exit__ = leave
        self.device = Device

    def manual_seed(self, seed):
        self.log.append("seed %d" % seed)


class ConstructTest(unittest.TestCase):
    def setUp(self):
        self.saved = sys.modules.get("torch")

    def tearDown(self):
        if self.saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.saved

    def construct(self, fake, device, build):
        sys.modules["torch"] = fake
        import kforge_pychild
        return kforge_pychild.construct(device, build)

    def test_given_a_gpu_the_module_is_built_under_its_device_after_the_seed(self):
        fake = FakeTorch()
        where = []
        model = self.construct(fake, "cuda:0", lambda: where.append(fake.inside) or "model")
        self.assertEqual(model, "model")
        self.assertEqual(where, ["cuda:0"])
        self.assertEqual(fake.log, ["seed 42", "enter cuda:0", "exit cuda:0"])

    def test_given_the_cpu_the_module_is_built_as_before(self):
        fake = FakeTorch()
        where = []
        self.construct(fake, "cpu", lambda: where.append(fake.inside))
        self.assertEqual(where, [None])
        self.assertEqual(fake.log, ["seed 42"])

    def test_given_a_torch_without_the_device_context_it_builds_without_it(self):
        fake = FakeTorch(context=False)
        where = []
        self.construct(fake, "cuda:0", lambda: where.append(fake.inside))
        self.assertEqual(where, [None])
        self.assertEqual(fake.log, ["seed 42"])

    def test_given_a_failure_on_the_device_it_reseeds_and_builds_on_the_cpu(self):
        fake = FakeTorch()
        where = []

        def build():
            where.append(fake.inside)
            if fake.inside:
                raise RuntimeError("no kernel for this device")
            return "model"
        self.assertEqual(self.construct(fake, "cuda:0", build), "model")
        self.assertEqual(where, ["cuda:0", None])
        self.assertEqual(fake.log, ["seed 42", "enter cuda:0", "exit cuda:0", "seed 42"])

    def test_given_a_failure_on_the_cpu_too_the_error_is_the_modules_own(self):
        fake = FakeTorch()

        def build():
            raise ValueError("bad init inputs")
        with self.assertRaisesRegex(ValueError, "bad init inputs"):
            self.construct(fake, "cuda:0", build)


class FakeCompilationError(Exception):
    """What Triton 3 raises when a @triton.jit kernel does not compile: the kernel's source from
    its def line (src), the AST node at fault (lineno counted from the def line) and a message."""

    def __init__(self, src, lineno, col, message):
        super().__init__(message)
        self.src, self.error_message = src, message
        self.node = types.SimpleNamespace(lineno=lineno, col_offset=col)


FakeCompilationError.__name__ = "CompilationError"
FakeCompilationError.__module__ = "triton.compiler.errors"

TRITON_CANDIDATE = """import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(x_ptr + offs) * undefined_scale
    tl.store(y_ptr + offs, y)
"""


class TritonCompileLogTest(unittest.TestCase):
    def log(self, error):
        import tempfile
        import kforge_pychild
        with tempfile.TemporaryDirectory() as folder:
            path = folder + "/candidate.py"
            with open(path, "w") as f:
                f.write(TRITON_CANDIDATE)
            return kforge_pychild.triton_compile_log(error, path, "candidate.py")

    def test_given_a_triton_compile_error_it_names_the_candidates_line_and_shows_it(self):
        src = TRITON_CANDIDATE[TRITON_CANDIDATE.index("def "):]
        log = self.log(FakeCompilationError(src, 3, 32, "NameError('undefined_scale is not defined')"))
        self.assertIn("candidate.py:8:33: error: NameError('undefined_scale is not defined')\n", log)
        self.assertIn("    8 |     y = tl.load(x_ptr + offs) * undefined_scale\n", log)
        self.assertIn("      | " + " " * 32 + "^", log)

    def test_given_a_kernel_not_in_the_file_it_says_the_kernels_own_line(self):
        log = self.log(FakeCompilationError("def other(x):\n    return x +\n", 2, 4, "invalid syntax"))
        self.assertIn("triton kernel line 2, column 5: error: invalid syntax", log)

    def test_other_exceptions_are_not_compile_errors(self):
        import kforge_pychild
        self.assertFalse(kforge_pychild.is_triton_compile_error(ValueError("x")))
        self.assertTrue(kforge_pychild.is_triton_compile_error(FakeCompilationError("", 1, 0, "m")))


class FirstCallCompileErrorTest(unittest.TestCase):
    """A DSL's compile error named by the job's compile_errors (the specs'
    first_call_compile_errors) is the candidate's compile error, whatever DSL raised it."""

    def test_given_a_listed_class_by_module_prefix_and_name_it_is_a_compile_error(self):
        import kforge_pychild
        UserCodeError = type("DSLUserCodeError", (Exception,), {"__module__": "cutlass.base_dsl.common"})
        Other = type("DSLRuntimeError", (Exception,), {"__module__": "cutlass.base_dsl.common"})
        kinds = ["triton:CompilationError", "cutlass.base_dsl:DSLUserCodeError"]
        self.assertTrue(kforge_pychild.is_first_call_compile_error(UserCodeError("x"), kinds))
        self.assertTrue(kforge_pychild.is_first_call_compile_error(type("Sub", (UserCodeError,), {})("x"), kinds))
        self.assertFalse(kforge_pychild.is_first_call_compile_error(Other("x"), kinds))
        self.assertFalse(kforge_pychild.is_first_call_compile_error(UserCodeError("x"), ["triton:CompilationError"]))
        self.assertFalse(kforge_pychild.is_first_call_compile_error(ValueError("x"), kinds))

    def test_its_log_has_no_terminal_colours_and_names_the_candidates_file(self):
        import kforge_pychild
        UserCodeError = type("DSLUserCodeError", (Exception,), {"__module__": "cutlass.base_dsl.common"})
        e = UserCodeError("/job/x/candidate.py:11 \x1b[91m^\x1b[0m name 'undefined_name' is not defined")
        log = kforge_pychild.dsl_compile_log(e, "/job/x/candidate.py", "gelu_cute.py")
        self.assertEqual(log, "DSLUserCodeError: gelu_cute.py:11 ^ name 'undefined_name' is not defined")


class ProbeTest(unittest.TestCase):
    """`kforge_pyworker.py probe [module...]`: a backend's python_module (cutlass for cute) is
    imported only when asked for, and says why when it does not import."""

    def probe(self, *modules):
        import json
        import os
        import subprocess
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run([sys.executable, os.path.join(here, "kforge_pyworker.py"), "probe", *modules],
                             capture_output=True, text=True, check=True).stdout
        return json.loads(out)

    def test_given_a_module_it_reports_its_version_or_why_it_does_not_import(self):
        info = self.probe("json", "kforge_no_such_module")
        self.assertIn("json", info)
        self.assertIn("No module named 'kforge_no_such_module'", info["kforge_no_such_module_error"])

    def test_without_a_module_only_torch_and_triton_are_probed(self):
        info = self.probe()
        self.assertFalse(any(k.startswith("kforge_no_such_module") or k.startswith("cutlass") for k in info))
        self.assertTrue("triton" in info or "triton_error" in info)


if __name__ == "__main__":
    unittest.main()
