#include "base/device_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace kforge {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

fs::path MakeLock(bool gate) {
  char tmpl[] = "/tmp/kforge-lock-test-XXXXXX";
  fs::path dir = mkdtemp(tmpl);
  fs::path lock = dir / "dev.lock";
  close(open(lock.c_str(), O_CREAT | O_RDWR, 0644));
  if (gate) close(open(DeviceLockGate(lock).c_str(), O_CREAT | O_RDWR, 0644));
  return lock;
}

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Two checkers hold the lock shared in turns that overlap, so that at every moment one of them
// holds it: with flock alone an exclusive request waits until both stop.
double ExclusiveWaitBesideOverlappingSharedHolders(const fs::path& lock, double run_ms) {
  std::atomic<bool> stop{false};
  auto checker = [&](int offset_ms) {
    DeviceLockFile l(lock);
    std::this_thread::sleep_for(std::chrono::milliseconds(offset_ms));
    while (!stop) {
      l.Shared();
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      l.Release();
    }
  };
  const Clock::time_point start = Clock::now();
  std::thread a(checker, 0), b(checker, 15);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  DeviceLockFile timer(lock);
  const Clock::time_point asked = Clock::now();
  std::thread stopper([&] {
    while (MsSince(start) < run_ms) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop = true;
  });
  timer.Exclusive();
  const double waited = MsSince(asked);
  timer.Release();
  stopper.join();
  a.join();
  b.join();
  return waited;
}

TEST(DeviceLockTest, GivenOverlappingSharedHoldersAnExclusiveRequestIsServedAtTheNextRelease) {
  const double waited = ExclusiveWaitBesideOverlappingSharedHolders(MakeLock(true), 3000);
  // Each shared turn lasts 30 ms; the bound leaves room for a loaded CI machine, and is far
  // below the 2.9 s that the request waits without the turnstile.
  EXPECT_LT(waited, 1000) << "the exclusive request waited for the shared holders to stop";
}

TEST(DeviceLockTest, WithoutItsTurnstileTheLockIsPlainFlockAndStarvesTheExclusiveRequest) {
  // The case the turnstile exists for, shown on a lock file without one.
  const double waited = ExclusiveWaitBesideOverlappingSharedHolders(MakeLock(false), 1500);
  EXPECT_GT(waited, 1000);
}

TEST(DeviceLockTest, ExclusiveExcludesSharedAndSharedHoldersShare) {
  const fs::path lock = MakeLock(true);
  DeviceLockFile x(lock), s1(lock), s2(lock);
  x.Exclusive();
  std::atomic<bool> got{false};
  std::thread t([&] {
    s1.Shared();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got) << "a shared request was granted while the lock was held exclusive";
  x.Release();
  t.join();
  EXPECT_TRUE(got);
  s2.Shared();  // a second shared holder beside the first
  s1.Release();
  s2.Release();
  // A downgrade and an upgrade of the same holder.
  x.Exclusive();
  x.Shared();
  s1.Shared();
  s1.Release();
  x.Exclusive();
  x.Release();
}

TEST(DeviceLockTest, AMissingLockFileMakesEveryCallANoOp) {
  DeviceLockFile l("/nonexistent/kforge/dev.lock");
  EXPECT_FALSE(l.usable());
  l.Exclusive();
  l.Release();
}

}  // namespace
}  // namespace kforge
