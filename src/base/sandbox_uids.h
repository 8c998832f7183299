// User ids of their own for sandboxed runs (as root): a lease on one id of a private range.
//
// RLIMIT_NPROC counts the tasks of a real user id, so children that all run as nobody share one
// count: a candidate that forks up to its limit leaves no process or thread for the children
// beside it (another candidate judged at the same time, a trusted reference job), which then
// fail to start threads and are judged runtime_error. A run with an id of its own (Limits::
// own_uid) is counted alone.
//
// The range is KFORGE_SANDBOX_UIDS ("FIRST:COUNT") or 1879048192:4096 (0x70000000 up: above
// the ranges systemd hands to users, dynamic users and containers, below 2^31). An id is leased
// by an open-file-description lock on its byte of a lock file only root can open
// (/run/kforge/sandbox-uids.lock, or <cache>/sandbox-uids.lock), so kforge processes on one host
// never lease the same id, and a crashed holder's leases end with it. An id that some process
// still runs as (a stray of a run without a PID namespace) is skipped.
#ifndef KFORGE_BASE_SANDBOX_UIDS_H_
#define KFORGE_BASE_SANDBOX_UIDS_H_

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace kforge {

struct UidRange {
  uid_t first = 1879048192;
  uint32_t count = 4096;
};

// KFORGE_SANDBOX_UIDS, or the default; *error says why a set value is unusable (the default
// is used then).
UidRange SandboxUidRange(std::string* error);

class UidLease {
 public:
  UidLease() = default;
  UidLease(uid_t uid, int fd) : uid_(uid), fd_(fd) {}
  ~UidLease();
  UidLease(UidLease&& other) noexcept;
  UidLease& operator=(UidLease&& other) noexcept;
  UidLease(const UidLease&) = delete;
  UidLease& operator=(const UidLease&) = delete;

  bool held() const { return fd_ >= 0; }
  uid_t uid() const { return uid_; }

 private:
  uid_t uid_ = 0;
  int fd_ = -1;
};

// A free id of `range`, locked in `lock_file` (created 0600 when missing): the lowest whose
// lock is free and that no process runs as. Lowest first, so that with N runs at a time the
// same N ids recur and what is kept per id (the PoCL kernel cache) stays warm. Not held
// (and *error says why) when the file cannot be opened or every id is taken.
UidLease LeaseSandboxUid(const std::filesystem::path& lock_file, UidRange range, std::string* error);

// The product's lease: the default lock file and KFORGE_SANDBOX_UIDS.
UidLease LeaseSandboxUid(std::string* error);

// Tasks (threads) whose real user id is `uid`, as RLIMIT_NPROC counts them.
uint64_t CountTasksOf(uid_t uid);

}  // namespace kforge

#endif  // KFORGE_BASE_SANDBOX_UIDS_H_
