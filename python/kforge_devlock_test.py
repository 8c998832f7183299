"""The Python worker's device lock (kforge_pyworker.DeviceLock): the protocol of
src/base/device_lock.h, whose C++ test (DeviceLockTest) checks the same cases."""

import os
import tempfile
import threading
import time
import unittest

from kforge_pyworker import DeviceLock


def make_lock(gate):
    d = tempfile.mkdtemp(prefix="kforge-devlock-")
    path = os.path.join(d, "dev.lock")
    open(path, "w").close()
    if gate:
        open(path + ".gate", "w").close()
    return path


def exclusive_wait(path, run_s):
    """Two holders take the lock shared in overlapping turns (one of them always holds it);
    returns how long an exclusive request waited."""
    stop = threading.Event()

    def checker(offset):
        lock = DeviceLock(path)
        time.sleep(offset)
        while not stop.is_set():
            lock.take(False)
            time.sleep(0.03)
            lock.release()

    start = time.monotonic()
    threads = [threading.Thread(target=checker, args=(o,)) for o in (0, 0.015)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    stopper = threading.Timer(max(0.0, run_s - (time.monotonic() - start)), stop.set)
    stopper.start()
    timer = DeviceLock(path)
    asked = time.monotonic()
    timer.take(True)
    waited = time.monotonic() - asked
    timer.release()
    stopper.join()
    for t in threads:
        t.join()
    return waited


class DeviceLockTest(unittest.TestCase):
    def test_an_exclusive_request_is_served_beside_overlapping_shared_holders(self):
        self.assertLess(exclusive_wait(make_lock(True), 3.0), 1.0)

    def test_without_its_turnstile_the_exclusive_request_waits_for_the_holders_to_stop(self):
        self.assertGreater(exclusive_wait(make_lock(False), 1.5), 1.0)

    def test_exclusive_excludes_shared_and_a_holder_downgrades_and_upgrades(self):
        path = make_lock(True)
        x, s = DeviceLock(path), DeviceLock(path)
        x.take(True)
        got = threading.Event()
        t = threading.Thread(target=lambda: (s.take(False), got.set()))
        t.start()
        time.sleep(0.1)
        self.assertFalse(got.is_set(), "a shared request was granted while the lock was held exclusive")
        x.take(False)  # a downgrade lets the shared holder in
        t.join(2)
        self.assertTrue(got.is_set())
        s.release()
        x.take(True)
        x.release()


if __name__ == "__main__":
    unittest.main()
