#include "base/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace kforge {

namespace fs = std::filesystem;

namespace {

void Flock(int fd, int op) {
  while (flock(fd, op) != 0 && errno == EINTR) {
  }
}

}  // namespace

fs::path DeviceLockGate(const fs::path& lock) { return fs::path(lock.string() + ".gate"); }

DeviceLockFile::DeviceLockFile(const fs::path& lock) {
  if (lock.empty()) return;
  fd_ = open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  // Without its turnstile (a lock file made by an older kforge) the lock is plain flock.
  if (fd_ >= 0) gate_ = open(DeviceLockGate(lock).c_str(), O_RDONLY | O_CLOEXEC);
}

DeviceLockFile::~DeviceLockFile() {
  if (fd_ >= 0) close(fd_);
  if (gate_ >= 0) close(gate_);
}

void DeviceLockFile::Take(bool exclusive) {
  if (fd_ < 0) return;
  const int want = exclusive ? 2 : 1;
  if (held_ == want) return;
  if (held_ == 2) {  // a downgrade: no one can be holding the lock, nothing to queue behind
    Flock(fd_, LOCK_SH);
    held_ = 1;
    return;
  }
  // Never wait at the turnstile holding the lock: an exclusive request waiting there for the
  // lock would wait for us.
  if (held_ != 0) Flock(fd_, LOCK_UN);
  if (gate_ >= 0) Flock(gate_, LOCK_EX);
  Flock(fd_, exclusive ? LOCK_EX : LOCK_SH);
  if (gate_ >= 0) Flock(gate_, LOCK_UN);
  held_ = want;
}

void DeviceLockFile::Release() {
  if (fd_ >= 0 && held_ != 0) Flock(fd_, LOCK_UN);
  held_ = 0;
}

}  // namespace kforge
