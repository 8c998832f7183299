"""The zygote's Triton warm-up (warm_triton in kforge_pyworker.py) with the worker's real Triton:
after it, Triton's compile-cache key is computed (a job forked from the zygote finds it in the
cache of the very function its first call asks), and no thread was started (the zygote forks).

Run: /opt/kforge/venv/bin/python3 -m unittest kforge_warm_triton_test (from python/), or
ctest -R PyWarmTritonTest.
"""
import os
import subprocess
import sys
import unittest

try:
    import triton
except ImportError:  # the worker's interpreter has it; another one may not
    triton = None

PROBE = r"""
import json, os, sys
sys.path.insert(0, %r)
import kforge_pyworker
info = {}
kforge_pyworker.warm_triton(info)
print(json.dumps({"info": info, "cached": kforge_pyworker.triton_key_function().cache_info().currsize,
                  "threads": len(os.listdir("/proc/self/task"))}))
"""


@unittest.skipIf(triton is None, "no Triton in this interpreter (scripts/setup installs the worker's)")
class WarmTritonTest(unittest.TestCase):
    def run_probe(self):
        # A fresh interpreter: this one may have computed the key already.
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run([sys.executable, "-c", PROBE % here], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        import json
        return json.loads(out.stdout.strip().splitlines()[-1])

    def test_the_key_triton_asks_for_is_computed_and_no_thread_started(self):
        got = self.run_probe()
        self.assertEqual(got["info"].get("triton"), triton.__version__, got)
        self.assertNotIn("triton_key", got["info"], got)  # set only when it failed
        self.assertIn("triton_key_seconds", got["info"], got)
        self.assertEqual(got["cached"], 1, got)
        self.assertEqual(got["threads"], 1, got)


if __name__ == "__main__":
    unittest.main()
