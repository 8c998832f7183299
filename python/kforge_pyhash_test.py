"""Tests of the child's input hashes (Child.hash in kforge_pychild.py) with the worker's real
PyTorch: each distinct value is hashed once, however many tensor objects show it.

Run: /usr/bin/python3 -m unittest kforge_pyhash_test (from python/), or ctest -R PyHashTest.
"""
import hashlib
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


if __name__ == "__main__":
    unittest.main()
