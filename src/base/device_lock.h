// A device's lock, shared between processes: flock(2) on a lock file, taken through a turnstile.
//
// Holders: checks and reference runs take it shared (they may share the device); a timed run
// takes it exclusive, so that nothing else runs on the device while it is timed. flock alone
// has no queue: while an exclusive request waits, new shared requests are still granted, and
// with several judgements checking side by side there may never be a moment without a shared
// holder. So every request first takes the turnstile (`<lock>.gate`) exclusive, then the lock,
// then lets the turnstile go: an exclusive request waits at the lock holding the turnstile, and
// every later request, shared or not, queues behind it. Nothing waits on the turnstile while
// holding the lock, so the two never deadlock. Python jobs take the same lock the same way
// (kforge_pyworker.py, DeviceLock).
#ifndef KFORGE_BASE_DEVICE_LOCK_H_
#define KFORGE_BASE_DEVICE_LOCK_H_

#include <filesystem>

namespace kforge {

class DeviceLockFile {
 public:
  // Opens `lock` and its turnstile read-only (flock needs no write access). A lock file that
  // cannot be opened makes every call a no-op (no cache, no lock: the judge still runs).
  explicit DeviceLockFile(const std::filesystem::path& lock);
  ~DeviceLockFile();
  DeviceLockFile(const DeviceLockFile&) = delete;
  DeviceLockFile& operator=(const DeviceLockFile&) = delete;

  void Shared() { Take(false); }
  void Exclusive() { Take(true); }
  void Release();
  bool usable() const { return fd_ >= 0; }

 private:
  void Take(bool exclusive);
  int fd_ = -1, gate_ = -1;
  int held_ = 0;  // 0 none, 1 shared, 2 exclusive
};

// The turnstile beside a lock file.
std::filesystem::path DeviceLockGate(const std::filesystem::path& lock);

}  // namespace kforge

#endif  // KFORGE_BASE_DEVICE_LOCK_H_
