#include "base/sandbox_uids.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;

UidRange SandboxUidRange(std::string* error) {
  UidRange range;
  const char* env = std::getenv("KFORGE_SANDBOX_UIDS");
  if (env == nullptr || *env == '\0') return range;
  char* end = nullptr;
  errno = 0;
  const unsigned long long first = std::strtoull(env, &end, 10);
  unsigned long long count = 0;
  bool ok = errno == 0 && end != env && *end == ':';
  if (ok) {
    const char* rest = end + 1;
    count = std::strtoull(rest, &end, 10);
    ok = errno == 0 && end != rest && *end == '\0';
  }
  // Ids from 1 (never root) to below 2^31 (tools that read an id as a signed int), and no
  // more than the lock file's bytes are worth.
  if (!ok || first == 0 || count == 0 || count > (1u << 20) || first + count > (1ull << 31)) {
    *error = fmt::format(
        "KFORGE_SANDBOX_UIDS='{}' is not FIRST:COUNT with 0 < FIRST, 0 < COUNT <= 1048576 and "
        "FIRST + COUNT <= 2147483648; using {}:{}",
        env, range.first, range.count);
    return range;
  }
  range.first = static_cast<uid_t>(first);
  range.count = static_cast<uint32_t>(count);
  return range;
}

UidLease::~UidLease() {
  if (fd_ >= 0) close(fd_);
}

UidLease::UidLease(UidLease&& other) noexcept : uid_(other.uid_), fd_(other.fd_) { other.fd_ = -1; }

UidLease& UidLease::operator=(UidLease&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    uid_ = other.uid_;
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

uint64_t CountTasksOf(uid_t uid) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    std::ifstream status(it->path() / "status");
    bool owned = false;
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Uid:", 0) == 0) owned = std::strtoul(line.c_str() + 4, nullptr, 10) == uid;
      if (line.rfind("Threads:", 0) == 0) {
        if (owned) total += std::strtoull(line.c_str() + 8, nullptr, 10);
        break;
      }
    }
  }
  return total;
}

UidLease LeaseSandboxUid(const fs::path& lock_file, UidRange range, std::string* error) {
  // O_NOFOLLOW and 0600: nobody else may open it (a sandboxed child holding a read lock on a
  // byte would keep that id from being leased).
  const int fd = open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = fmt::format("cannot open the sandbox id lock file {}: {}", lock_file.string(),
                         std::generic_category().message(errno));
    return {};
  }
  struct stat st = {};
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    close(fd);
    *error = fmt::format("the sandbox id lock file {} must belong to uid {} with mode 0600; remove it",
                         lock_file.string(), geteuid());
    return {};
  }
  for (uint32_t slot = 0; slot < range.count; ++slot) {
    struct flock lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = slot;
    lock.l_len = 1;
    if (fcntl(fd, F_OFD_SETLK, &lock) != 0) continue;  // leased by another run
    const uid_t uid = range.first + slot;
    if (CountTasksOf(uid) == 0) return UidLease(uid, fd);
    lock.l_type = F_UNLCK;
    fcntl(fd, F_OFD_SETLK, &lock);
  }
  close(fd);
  *error = fmt::format("every id of {}:{} is leased or in use", range.first, range.count);
  return {};
}

UidLease LeaseSandboxUid(std::string* error) {
  std::string range_error;
  const UidRange range = SandboxUidRange(&range_error);
  std::error_code ec;
  fs::path dir = "/run/kforge";
  fs::create_directories(dir, ec);
  if (ec || chmod(dir.c_str(), 0700) != 0) {
    Result<fs::path> cache = CacheDir();
    if (!cache.ok()) {
      *error = "no folder for the sandbox id lock file: /run/kforge cannot be made and " + cache.status().message();
      return {};
    }
    dir = *cache;
  }
  UidLease lease = LeaseSandboxUid(dir / "sandbox-uids.lock", range, error);
  if (!range_error.empty()) *error = error->empty() ? range_error : range_error + "; " + *error;
  return lease;
}

}  // namespace kforge
