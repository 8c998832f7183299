// The sandboxed process runner: fork, confine the child, exec, supervise, clean up.
//
// Life of a Run():
//   1. The parent prepares everything the child needs (argv, envp, the list of paths to try
//      for argv[0], the rlimit values, uid/gid maps) because after fork() in a multithreaded
//      process the child may only make async-signal-safe calls: no malloc, no locks.
//   2. The child confines itself (session, fds, namespaces, mounts, limits, cwd, user, seccomp)
//      and execs; with a PID namespace through an init (sandbox_child.h). It reports through a
//      close-on-exec pipe (Report records); EOF means exec worked.
//   3. The parent pumps stdin/stdout/stderr with poll() until the child exits, the deadline
//      passes or the output floods. A pidfd in the poll set wakes it when the child exits even
//      while grandchildren hold the pipes open.
//   4. Clean-up, always in this order: SIGKILL the process group while the child is still an
//      unreaped zombie (so its pid, hence the group id, cannot have been reused), reap the
//      child, drain the pipes for a short grace period, reap the killed group members that
//      were re-parented to us (we are a child subreaper), each step bounded in time.
#include "base/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "base/files.h"
#include "base/sandbox_child.h"
#include "base/sandbox_uids.h"
#include "base/seccomp_filter.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uid_t kNobodyUid = 65534;
constexpr gid_t kNobodyGid = 65534;
constexpr double kReapGraceSeconds = 5.0;   // for a SIGKILLed child to disappear
constexpr double kDrainGraceSeconds = 0.5;  // for pipes to reach EOF once the child is gone
constexpr double kGroupGraceSeconds = 1.0;  // for killed group members to be gone
constexpr int kNoPidfdPollMs = 5;           // poll slice when pidfd_open is unavailable
constexpr size_t kReadChunk = 64 << 10;
constexpr char kDefaultPath[] = "/bin:/usr/bin";  // glibc's default when PATH is unset

// Thread-safe, unlike strerror().
std::string ErrnoText(int err) { return std::generic_category().message(err); }

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double SecondsUntil(Clock::time_point end) {
  return std::chrono::duration<double>(end - Clock::now()).count();
}

Clock::duration ToDuration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

Clock::time_point After(double seconds) { return Clock::now() + ToDuration(seconds); }

void SleepMs(int ms) { poll(nullptr, 0, ms); }

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Both ends close-on-exec, so children started by other threads never inherit them.
bool MakePipe(Fd* read_end, Fd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return true;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// --- In the parent: building the plan. --------------------------------------------------------

// `value` as soft and `hard` as hard limit, where 0 means unlimited, never above the current
// hard limit (an unprivileged child could not raise it; setrlimit would fail).
LimitSetting MakeLimit(int resource, uint64_t value, uint64_t hard) {
  rlimit current{RLIM_INFINITY, RLIM_INFINITY};
  getrlimit(resource, &current);
  auto clamp = [&](uint64_t v) {
    return v == 0 ? current.rlim_max : std::min<rlim_t>(v, current.rlim_max);
  };
  return {resource, {clamp(value), clamp(hard)}};
}

void PlanLimits(const Limits& limits, ChildPlan* plan) {
  uint64_t cpu = limits.cpu_seconds > 0 ? std::ceil(limits.cpu_seconds) : 0;
  plan->limits = {
      MakeLimit(RLIMIT_AS, limits.address_space_bytes, limits.address_space_bytes),
      MakeLimit(RLIMIT_CPU, cpu, cpu == 0 ? 0 : cpu + 1),  // SIGXCPU, then SIGKILL
      MakeLimit(RLIMIT_FSIZE, limits.file_size_bytes, limits.file_size_bytes),
      {RLIMIT_CORE, {0, 0}},
  };
  // Without a user namespace of its own the child shares the count with every process of its
  // user, so it gets max_processes on top of what that user runs already. (The kernel does not
  // enforce the limit for root; no need to count then.)
  uint64_t n = std::max(limits.max_processes, 0);
  const bool enforced = !plan->root || plan->drop_privileges;
  uid_t user = plan->drop_privileges ? plan->uid : getuid();
  // An id leased for this run has no task yet (LeaseSandboxUid checked).
  uint64_t shared = (n == 0 || !enforced) ? n : (plan->own_uid ? 0 : CountTasksOf(user)) + n;
  plan->nproc_shared = MakeLimit(RLIMIT_NPROC, shared, shared).value;
  // In its own user namespace the outer child and the init count too (same uid).
  uint64_t own = n == 0 ? 0 : n + (limits.isolate_processes ? 2 : 0);
  plan->nproc_own = MakeLimit(RLIMIT_NPROC, own, own).value;
}

// Where argv[0] may be, in execvp() order. An empty PATH element means the working directory.
std::vector<std::string> ExecCandidates(const std::string& name, const std::string& path) {
  if (name.find('/') != std::string::npos) return {name};
  std::vector<std::string> candidates;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = std::min(path.find(':', begin), path.size());
    std::string dir = path.substr(begin, end - begin);
    candidates.push_back((dir.empty() ? "." : dir) + "/" + name);
    begin = end + 1;
  }
  return candidates;
}

void PlanCommand(const ProcessSpec& spec, ChildPlan* plan) {
  auto env_path = spec.env.find("PATH");
  const char* parent_path = getenv("PATH");
  plan->path_searched = env_path != spec.env.end() ? env_path->second
                        : parent_path              ? parent_path
                                                   : kDefaultPath;
  plan->exec_paths = ExecCandidates(spec.argv[0], plan->path_searched);
  plan->args = spec.argv;
  for (const auto& [key, value] : spec.env) plan->env.push_back(key + "=" + value);
  for (std::string& arg : plan->args) plan->argv.push_back(arg.data());
  for (std::string& var : plan->env) plan->envp.push_back(var.data());
  plan->argv.push_back(nullptr);
  plan->envp.push_back(nullptr);
}

// The seccomp program is built once per process (base/seccomp_filter.h).
void PlanSeccomp(const Limits& limits, ChildPlan* plan) {
  plan->want_seccomp = limits.seccomp;
  if (!limits.seccomp) return;
  const SeccompFilter& filter = SandboxSeccompFilter(limits.allow_perf_events);
  if (filter.error.empty()) {
    plan->seccomp = &filter.program;
  } else {
    plan->seccomp_error = filter.error;
  }
}

// `own_uid`: an id leased for this run (0: none, the run uses spec.limits.sandbox_uid).
ChildPlan MakePlan(const ProcessSpec& spec, uid_t own_uid) {
  ChildPlan plan;
  plan.root = geteuid() == 0;
  plan.drop_privileges = plan.root && spec.limits.drop_privileges;
  plan.own_uid = plan.drop_privileges && own_uid != 0;
  plan.uid = plan.own_uid ? own_uid : spec.limits.sandbox_uid;
  plan.isolate_network = spec.limits.isolate_network;
  plan.isolate_processes = spec.limits.isolate_processes;
  plan.private_fs = spec.limits.private_filesystem;
  std::error_code ec;
  const fs::path cwd = spec.cwd.empty() ? fs::path() : fs::canonical(spec.cwd, ec);
  plan.cwd = ec ? spec.cwd.string() : cwd.string();  // a missing one: PrepareWorkdir says so
  plan.uid_map = fmt::format("{0} {0} 1\n", geteuid());
  plan.gid_map = fmt::format("{0} {0} 1\n", getegid());
  plan.parent = getpid();
  rlimit files{1024, 1024};
  getrlimit(RLIMIT_NOFILE, &files);
  plan.max_fd = static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20));
  PlanLimits(spec.limits, &plan);
  PlanCommand(spec, &plan);
  PlanSeccomp(spec.limits, &plan);
  return plan;
}

// Checks the working directory and, when the child will run as nobody, hands it over.
// Returns an error message, empty on success.
std::string PrepareWorkdir(const ProcessSpec& spec, bool drop_privileges, uid_t uid) {
  if (spec.cwd.empty()) return "";
  std::error_code ec;
  if (!fs::is_directory(spec.cwd, ec)) {
    return fmt::format("working directory '{}' does not exist or is not a directory",
                       spec.cwd.string());
  }
  if (drop_privileges && chown(spec.cwd.c_str(), uid, kNobodyGid) != 0) {
    return fmt::format("cannot give working directory '{}' to the sandbox user {}: {}", spec.cwd.string(), uid,
                       ErrnoText(errno));
  }
  return "";
}

// --- In the parent: planning the private filesystem view. -------------------------------------

constexpr const char* kPrivateTmpfs[] = {"/tmp", "/var/tmp", "/dev/shm"};
// Files a private tmpfs may hold (each is an inode in RAM; its size is bounded by
// Limits::file_size_bytes): far more than a compiler or a JIT cache makes.
constexpr int kPrivateTmpfsInodes = 65536;
constexpr size_t kMaxListedPaths = 16;  // writable_paths, readable_paths

// True when `path` lies strictly below the folder `dir` (both canonical, dir not "/").
bool IsBelow(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

void AddBind(const std::string& path, bool writable, ChildPlan* plan) {
  for (Bind& bind : plan->binds) {
    if (bind.path == path) {
      bind.writable = bind.writable || writable;
      return;
    }
  }
  plan->binds.push_back({path, writable});
}

// A folder below a private tmpfs would vanish behind it: it is bound back, read-only. Folders
// elsewhere are visible (read-only) anyway. Missing ones are skipped.
void KeepVisible(const fs::path& path, ChildPlan* plan) {
  std::error_code ec;
  const std::string dir = fs::canonical(path, ec).string();
  if (ec || !fs::is_directory(dir, ec)) return;
  for (const std::string& tmpfs : plan->tmpfs) {
    if (IsBelow(dir, tmpfs) || dir == tmpfs) return AddBind(dir, false, plan);
  }
}

// The install prefix of a program in `dir`: the folder above a "bin" (a virtual environment, a
// conda or pyenv version, a toolkit: their lib/ and include/ beside it), else `dir` itself.
fs::path PrefixOf(const fs::path& dir) { return dir.filename() == "bin" ? dir.parent_path() : dir; }

// The folder of the program (of each PATH candidate) and its install prefix, for the link and
// for what it resolves to (a virtual environment's python is a link to its base interpreter);
// spec.readable_paths. A prefix that is a hidden home itself stays hidden.
void KeepReadablesVisible(const ProcessSpec& spec, ChildPlan* plan) {
  auto keep_prefix = [plan](const fs::path& dir) {
    std::error_code ec;
    const std::string prefix = fs::canonical(PrefixOf(dir), ec).string();
    if (ec || std::find(plan->tmpfs.begin(), plan->tmpfs.end(), prefix) != plan->tmpfs.end()) return;
    KeepVisible(prefix, plan);
  };
  for (const std::string& candidate : plan->exec_paths) {
    if (candidate.empty() || candidate[0] != '/') continue;  // relative: in the working folder
    KeepVisible(fs::path(candidate).parent_path(), plan);
    std::error_code ec;
    if (!fs::exists(candidate, ec)) continue;
    keep_prefix(fs::path(candidate).parent_path());
    const fs::path real = fs::canonical(candidate, ec);
    if (!ec) {
      KeepVisible(real.parent_path(), plan);
      keep_prefix(real.parent_path());
    }
  }
  for (const fs::path& path : spec.readable_paths) KeepVisible(path, plan);
  // A user's own installs (pip --user, its scripts) stay usable with the home hidden.
  for (const std::string& home : plan->hidden_homes) {
    KeepVisible(fs::path(home) / ".local" / "lib", plan);
    KeepVisible(fs::path(home) / ".local" / "bin", plan);
  }
}

// The invoking user's home ($HOME) and /root, canonical: hidden behind a private tmpfs, so that
// a candidate cannot read what its user keeps there (run as that user, a candidate's
// `#include "$HOME/..."` put a 0600 file's contents into the compiler's log, which goes to the
// model). Not "/", nor a folder already private.
std::vector<std::string> HomesToHide(const ChildPlan& plan) {
  std::vector<std::string> homes;
  const char* home = getenv("HOME");
  for (const std::string& dir : {std::string(home ? home : ""), std::string("/root")}) {
    std::error_code ec;
    if (dir.empty()) continue;
    const std::string real = fs::canonical(dir, ec).string();
    if (ec || real == "/" || !fs::is_directory(real, ec)) continue;
    bool covered = false;
    for (const std::string& t : plan.tmpfs) covered |= real == t || IsBelow(real, t);
    for (const std::string& h : homes) covered |= real == h;
    if (!covered) homes.push_back(real);
  }
  return homes;
}

// Mount points inside a private tmpfs do not exist there yet: every folder from the tmpfs down
// to the bind is created, in order.
void PlanMountPoints(ChildPlan* plan) {
  for (const Bind& bind : plan->binds) {
    for (const std::string& tmpfs : plan->tmpfs) {
      if (!IsBelow(bind.path, tmpfs)) continue;
      for (size_t slash = bind.path.find('/', tmpfs.size() + 1);;
           slash = bind.path.find('/', slash + 1)) {
        plan->mkdirs.push_back(bind.path.substr(0, slash));
        if (slash == std::string::npos) break;
      }
    }
  }
}

// Which tmpfs, which folders stay visible (writable: cwd and spec.writable_paths; read-only:
// the program's and spec.readable_paths, where a tmpfs would hide them), in which order. Returns an
// error message, empty on success.
std::string PlanFilesystem(const ProcessSpec& spec, ChildPlan* plan) {
  if (!plan->private_fs) return "";
  if (spec.writable_paths.size() > kMaxListedPaths ||
      spec.readable_paths.size() > kMaxListedPaths) {
    return fmt::format("{} writable and {} readable paths; at most {} each",
                       spec.writable_paths.size(), spec.readable_paths.size(), kMaxListedPaths);
  }
  std::error_code ec;
  for (const char* dir : kPrivateTmpfs) {
    const std::string real = fs::canonical(dir, ec).string();
    if (ec || real == "/" || !fs::is_directory(real, ec)) continue;
    if (std::find(plan->tmpfs.begin(), plan->tmpfs.end(), real) == plan->tmpfs.end()) {
      plan->tmpfs.push_back(real);
    }
  }
  plan->hidden_homes = HomesToHide(*plan);
  for (const std::string& home : plan->hidden_homes) plan->tmpfs.push_back(home);
  plan->tmpfs_options = "mode=1777,nr_inodes=" + std::to_string(kPrivateTmpfsInodes);
  if (spec.limits.file_size_bytes > 0) {
    plan->tmpfs_options += fmt::format(",size={}", spec.limits.file_size_bytes);
  }
  if (!plan->cwd.empty() && plan->cwd != "/")
    AddBind(plan->cwd, true, plan);  // "/" stays read-only
  for (const fs::path& path : spec.writable_paths) {
    const fs::path real = fs::canonical(path, ec);
    if (ec || !fs::is_directory(real, ec)) {
      return fmt::format("writable path '{}' is not an existing folder", path.string());
    }
    if (real == "/") return "the root folder cannot be made writable (writable_paths)";
    AddBind(real.string(), true, plan);
  }
  KeepReadablesVisible(spec, plan);
  if (plan->binds.size() > kMaxBinds) return "too many folders to keep visible in the sandbox";
  // Parents before children, so that a nested folder is mounted on top of its parent.
  std::stable_sort(plan->binds.begin(), plan->binds.end(),
                   [](const Bind& a, const Bind& b) { return a.path.size() < b.path.size(); });
  PlanMountPoints(plan);
  return "";
}

std::string FsStepText(int detail, const ChildPlan& plan) {
  const size_t index = static_cast<size_t>(detail) >> 8;
  switch (detail & 0xff) {
    case kFsNamespace:
      return "unshare(CLONE_NEWNS)";
    case kFsIdMap:
      return "mapping the user's ids in its user namespace";
    case kFsPropagation:
      return "making the mounts private";
    case kFsClone:
      return "open_tree (copying the folders that stay visible)";
    case kFsReadOnly:
      return "mount_setattr (read-only)";
    case kFsTmpfs:
      return "mounting a tmpfs on " + (index < plan.tmpfs.size() ? plan.tmpfs[index] : "?");
    case kFsBind:
      return "mounting " + (index < plan.binds.size() ? plan.binds[index].path : "?");
  }
  return "?";
}

std::string StartErrorText(const Report& report, const ChildPlan& plan) {
  const std::string why = ErrnoText(report.err);
  const std::string& name = plan.args[0];
  switch (report.stage) {
    case Stage::kExec:
      if (name.find('/') != std::string::npos) return fmt::format("cannot run '{}': {}", name, why);
      return fmt::format("cannot run '{}': {} (searched PATH={})", name, why, plan.path_searched);
    case Stage::kWorkdir:
      return fmt::format("cannot enter working directory '{}': {}", plan.cwd, why);
    case Stage::kLimits:
      return "cannot set resource limits: " + why;
    case Stage::kUser:
      return "cannot switch to user nobody (65534): " + why;
    case Stage::kFds:
      return "cannot set up the child's standard streams: " + why;
    case Stage::kFilesystem:
      return "cannot set up the private filesystem view: " + FsStepText(report.detail, plan) +
             ": " + why;
    case Stage::kInit:
      return "cannot start the sandbox's init or the program under it: fork: " + why;
    default:
      return "cannot set up the child's session: " + why;
  }
}

// What a mechanism the limits asked for could not do, for ProcessResult::isolation_gaps;
// empty for reports that are not about a gap.
std::string GapText(const Report& report, const ChildPlan& plan) {
  const std::string why = ErrnoText(report.err);
  switch (report.stage) {
    case Stage::kNetworkShared:
      return "network: shared with the host (unshare: " + why + ")";
    case Stage::kProcessesShared:
      return "pid namespace: none (unshare: " + why +
             "); descendants that leave the process group can outlive the run";
    case Stage::kFilesystemShared:
      return "filesystem: shared with the host, writable where the user may write (" +
             FsStepText(report.detail, plan) + ": " + why + ")";
    case Stage::kProcShared:
      return "proc: the host's /proc stays visible (mount proc: " + why + ")";
    case Stage::kSeccompInactive:
      return "seccomp: no filter (" +
             (report.err == 0 ? plan.seccomp_error : "prctl(PR_SET_SECCOMP): " + why) + ")";
    default:
      return "";
  }
}

// --- In the parent: supervising the child. ----------------------------------------------------

// Writes without SIGPIPE killing the parent when the child closed its stdin: blocks SIGPIPE in
// this thread and swallows the one this write raised (unless one was pending before).
ssize_t WriteNoSigpipe(int fd, const char* data, size_t size) {
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE);
  ssize_t written = write(fd, data, size);
  const int saved_errno = errno;
  if (written < 0 && saved_errno == EPIPE && !was_pending) {
    timespec zero = {};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved_errno;
  return written;
}

// One output stream of the child: the first `cap` bytes are kept, the rest only counted.
struct OutputStream {
  Fd fd;
  std::string* kept = nullptr;
  uint64_t* total = nullptr;
  uint64_t cap = 0;
  const std::function<void(std::string_view)>* tap = nullptr;  // sees every chunk

  // Reads one chunk; closes the stream at EOF or on an error.
  void ReadChunk() {
    char buffer[kReadChunk];
    ssize_t n = read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) return fd.Reset();
    uint64_t room = cap > kept->size() ? cap - kept->size() : 0;
    kept->append(buffer, std::min<uint64_t>(room, n));
    *total += n;
    if (tap && *tap) (*tap)(std::string_view(buffer, static_cast<size_t>(n)));
  }
};

enum class Stop { kExited, kTimedOut, kOutputFlood, kFolderFlood };

// The optional conversation of ProcessSpec (stdin_fd, cancel_fd, on_stdout).
struct Conversation {
  int cancel_fd = -1;
  const std::function<void(std::string_view)>* on_stdout = nullptr;
};

// The parent's ends of the child's pipes.
struct ParentEnds {
  Fd stdin_write, stdout_read, stderr_read, report_read;
};

// A started child and the parent's ends of its pipes. The destructor kills and reaps a child
// that was not reaped yet, so an exception cannot leak it.
class RunningChild {
 public:
  // `stdin_data` and `result` must outlive this object.
  RunningChild(pid_t pid, ParentEnds ends, const std::string& stdin_data, ProcessResult* result,
               Conversation conversation = {});
  ~RunningChild();

  // Pumps the pipes until the child exits, `deadline` passes, the output exceeds
  // `flood_bytes` (0: no limit) or the folder `folder` holds more than `folder_bytes` (0: no
  // limit; measured every kFolderPollMs).
  Stop Supervise(Clock::time_point deadline, uint64_t flood_bytes, const std::filesystem::path& folder = {},
                 uint64_t folder_bytes = 0);
  // Kills the whole group, reaps the child, drains the pipes, reaps the group; each bounded.
  void Finish();

  bool reaped() const { return reaped_; }
  int status() const { return status_; }
  const std::vector<Report>& reports() const { return reports_; }

 private:
  bool Exited() const;
  bool Cancelled() const;
  void Pump(int timeout_ms, bool watch_exit);
  void WriteStdin();
  void ReadReports();
  void KillGroup();
  void Reap(double grace_seconds);
  void Drain(double grace_seconds);
  void ReapGroup(double grace_seconds);
  void AddUsage(const rusage& usage);

  pid_t pid_;
  Fd pidfd_;
  Fd stdin_;
  std::string_view stdin_left_;
  OutputStream out_, err_;
  Fd report_;
  std::string report_bytes_;
  std::vector<Report> reports_;
  ProcessResult* result_;
  int cancel_fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

RunningChild::RunningChild(pid_t pid, ParentEnds ends, const std::string& stdin_data,
                           ProcessResult* result, Conversation conversation)
    : pid_(pid),
      pidfd_(static_cast<int>(syscall(SYS_pidfd_open, pid, 0))),  // -1 before Linux 5.3
      stdin_(std::move(ends.stdin_write)),
      stdin_left_(stdin_data),
      report_(std::move(ends.report_read)),
      result_(result),
      cancel_fd_(conversation.cancel_fd) {
  const uint64_t cap = result->limits.output_bytes;
  out_ = {std::move(ends.stdout_read), &result->out, &result->out_total, cap, conversation.on_stdout};
  err_ = {std::move(ends.stderr_read), &result->err, &result->err_total, cap};
  for (int fd : {stdin_.get(), out_.fd.get(), err_.fd.get(), report_.get()}) SetNonBlocking(fd);
  if (stdin_left_.empty()) stdin_.Reset();
}

RunningChild::~RunningChild() {
  if (reaped_) return;
  KillGroup();
  Reap(kReapGraceSeconds);
}

// True once the child has ended; leaves it unreaped (a zombie holds its pid and group id).
bool RunningChild::Exited() const {
  siginfo_t info = {};
  return waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
}

Stop RunningChild::Supervise(Clock::time_point deadline, uint64_t flood_bytes, const fs::path& folder,
                             uint64_t folder_bytes) {
  const bool watch_folder = folder_bytes > 0 && !folder.empty();
  Clock::time_point next_measure = Clock::now();
  for (;;) {
    if (flood_bytes > 0 && result_->out_total + result_->err_total > flood_bytes) {
      return Stop::kOutputFlood;
    }
    if (watch_folder && Clock::now() >= next_measure) {
      const uint64_t held = FolderFootprint(folder, folder_bytes);
      if (held > folder_bytes) {
        result_->folder_bytes = held;
        return Stop::kFolderFlood;
      }
      next_measure = Clock::now() + std::chrono::milliseconds(kFolderPollMs);
    }
    if (Exited()) return Stop::kExited;
    double left = SecondsUntil(deadline);
    if (left <= 0 || Cancelled()) return Stop::kTimedOut;
    int timeout_ms = static_cast<int>(std::min(std::ceil(left * 1000), 1e9));
    if (!pidfd_.valid()) timeout_ms = std::min(timeout_ms, kNoPidfdPollMs);
    if (watch_folder) {
      const double until_measure = std::chrono::duration<double, std::milli>(next_measure - Clock::now()).count();
      timeout_ms = std::min(timeout_ms, std::max(1, static_cast<int>(std::ceil(until_measure))));
    }
    Pump(timeout_ms, /*watch_exit=*/true);
  }
}

bool RunningChild::Cancelled() const {
  if (cancel_fd_ < 0) return false;
  pollfd fd = {cancel_fd_, POLLIN, 0};
  return poll(&fd, 1, 0) > 0;
}

// One poll() round over whatever is still open; services every ready fd.
void RunningChild::Pump(int timeout_ms, bool watch_exit) {
  pollfd fds[6];
  int n = 0;
  if (stdin_.valid()) fds[n++] = {stdin_.get(), POLLOUT, 0};
  for (int fd : {out_.fd.get(), err_.fd.get(), report_.get()}) {
    if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
  }
  if (watch_exit && pidfd_.valid()) fds[n++] = {pidfd_.get(), POLLIN, 0};
  if (watch_exit && cancel_fd_ >= 0) fds[n++] = {cancel_fd_, POLLIN, 0};
  if (poll(fds, n, timeout_ms) <= 0) return;
  for (int i = 0; i < n; ++i) {
    if (fds[i].revents == 0) continue;
    if (fds[i].fd == stdin_.get()) WriteStdin();
    if (fds[i].fd == out_.fd.get()) out_.ReadChunk();
    if (fds[i].fd == err_.fd.get()) err_.ReadChunk();
    if (fds[i].fd == report_.get()) ReadReports();
  }
}

void RunningChild::WriteStdin() {
  ssize_t n = WriteNoSigpipe(stdin_.get(), stdin_left_.data(), stdin_left_.size());
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n > 0) stdin_left_.remove_prefix(n);
  if (n < 0 || stdin_left_.empty()) stdin_.Reset();  // EOF for the child, or it closed stdin
}

void RunningChild::ReadReports() {
  char buffer[256];
  ssize_t n = read(report_.get(), buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) return report_.Reset();
  report_bytes_.append(buffer, n);
  while (report_bytes_.size() >= sizeof(Report)) {
    Report report;
    std::memcpy(&report, report_bytes_.data(), sizeof report);
    reports_.push_back(report);
    report_bytes_.erase(0, sizeof report);
  }
}

void RunningChild::Finish() {
  stdin_.Reset();
  KillGroup();
  Reap(kReapGraceSeconds);
  Drain(kDrainGraceSeconds);
  ReapGroup(kGroupGraceSeconds);
}

// The child itself too, in case it was killed before its setsid().
void RunningChild::KillGroup() {
  kill(-pid_, SIGKILL);
  if (!reaped_) kill(pid_, SIGKILL);
}

// Gives up after the grace period (a task stuck in the kernel); the zombie is then left behind.
void RunningChild::Reap(double grace_seconds) {
  const Clock::time_point end = After(grace_seconds);
  for (;;) {
    rusage usage = {};
    pid_t got = wait4(pid_, &status_, WNOHANG, &usage);
    if (got == pid_) {
      reaped_ = true;
      return AddUsage(usage);
    }
    if (got < 0 && errno != EINTR) return;  // ECHILD: reaped elsewhere, status unknown
    if (SecondsUntil(end) <= 0) return;
    if (pidfd_.valid()) {
      pollfd fd = {pidfd_.get(), POLLIN, 0};
      poll(&fd, 1, static_cast<int>(std::ceil(SecondsUntil(end) * 1000)));
    } else {
      SleepMs(kNoPidfdPollMs);
    }
  }
}

// Reads what the pipes still hold. EOF comes as soon as every writer is dead; a writer that
// escaped the group kill only costs the grace period.
void RunningChild::Drain(double grace_seconds) {
  const Clock::time_point end = After(grace_seconds);
  while (out_.fd.valid() || err_.fd.valid() || report_.valid()) {
    double left = SecondsUntil(end);
    if (left <= 0) break;
    Pump(static_cast<int>(std::ceil(left * 1000)), /*watch_exit=*/false);
  }
}

// Killed members of the group become our children (we are a subreaper) once their parents are
// dead; reap them so they do not stay zombies. Done when we have no child left in the group and
// the group is empty.
void RunningChild::ReapGroup(double grace_seconds) {
  const Clock::time_point end = After(grace_seconds);
  for (;;) {
    rusage usage = {};
    int status = 0;
    pid_t got;
    while ((got = wait4(-pid_, &status, WNOHANG, &usage)) > 0) AddUsage(usage);
    const bool no_children = got < 0 && errno == ECHILD;
    if (no_children && kill(-pid_, 0) != 0 && errno == ESRCH) return;
    if (SecondsUntil(end) <= 0) return;
    SleepMs(2);
  }
}

void RunningChild::AddUsage(const rusage& usage) {
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  result_->cpu_seconds += seconds(usage.ru_utime) + seconds(usage.ru_stime);
  result_->max_rss_kb = std::max<int64_t>(result_->max_rss_kb, usage.ru_maxrss);
}

// --- Putting it together. ---------------------------------------------------------------------

ProcessResult StartFailed(ProcessResult result, std::string why) {
  result.end = ProcessResult::End::kStartFailed;
  result.start_error = std::move(why);
  return result;
}

// What was active, from the child's reports.
void RecordIsolation(const std::vector<Report>& reports, const ChildPlan& plan, ProcessResult* r) {
  for (const Report& report : reports) {
    if (report.stage == Stage::kNetworkPrivate) r->network_private = true;
    if (report.stage == Stage::kProcessesPrivate) r->pid_namespace = true;
    if (report.stage == Stage::kFilesystemPrivate) r->private_fs = true;
    if (report.stage == Stage::kSeccompActive) r->seccomp = true;
    if (std::string gap = GapText(report, plan); !gap.empty()) r->isolation_gaps.push_back(gap);
  }
}

void Classify(Stop stop, const RunningChild& child, const ChildPlan& plan, ProcessResult* r) {
  RecordIsolation(child.reports(), plan, r);
  // The outer child's status, or the target's as the init saw it (under a PID namespace the
  // outer child only mirrors that, and an exit code cannot tell 139 from SIGSEGV).
  bool known = child.reaped();
  int status = child.status();
  for (const Report& report : child.reports()) {
    if (report.stage >= Stage::kSession) {
      r->end = ProcessResult::End::kStartFailed;
      r->start_error = StartErrorText(report, plan);
      return;
    }
    if (report.stage == Stage::kTargetStatus && stop == Stop::kExited) {
      known = true;
      status = report.detail;
    }
  }
  if (known && WIFSIGNALED(status)) r->signal = WTERMSIG(status);
  if (stop == Stop::kTimedOut) {
    r->end = ProcessResult::End::kTimedOut;
  } else if (stop == Stop::kOutputFlood) {
    r->end = ProcessResult::End::kOutputFlood;
  } else if (stop == Stop::kFolderFlood) {
    r->end = ProcessResult::End::kFolderFlood;
  } else if (known && WIFSIGNALED(status)) {
    r->end = ProcessResult::End::kSignaled;
  } else {
    r->end = ProcessResult::End::kExited;  // exit_code stays -1 if the status was lost
    if (known && WIFEXITED(status)) r->exit_code = WEXITSTATUS(status);
  }
}

// Creates the pipes and forks. Returns the child's pid, or -1 with *error. The child's ends
// are closed here in the parent when this returns.
pid_t StartChild(const ChildPlan& plan, int stdin_fd, ParentEnds* ends, std::string* error) {
  Fd in_read, out_write, err_write, report_write;
  if (stdin_fd >= 0) {
    in_read = Fd(fcntl(stdin_fd, F_DUPFD_CLOEXEC, 3));
    if (!in_read.valid()) {
      *error = "cannot duplicate the stdin descriptor: " + ErrnoText(errno);
      return -1;
    }
  }
  if ((stdin_fd < 0 && !MakePipe(&in_read, &ends->stdin_write)) || !MakePipe(&ends->stdout_read, &out_write) ||
      !MakePipe(&ends->stderr_read, &err_write) || !MakePipe(&ends->report_read, &report_write)) {
    *error = "cannot create pipes: " + ErrnoText(errno);
    return -1;
  }
  const pid_t pid = fork();
  if (pid == 0)
    ChildMain(plan, {in_read.get(), out_write.get(), err_write.get(), report_write.get()});
  if (pid < 0) *error = "cannot fork: " + ErrnoText(errno);
  return pid;
}

// True when user nobody can reach and execute `path`: every folder above it searchable by
// others and the file executable and readable by others.
bool NobodyCanExecute(const fs::path& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return true;  // let exec report the real error
  if ((st.st_mode & (S_IXOTH | S_IROTH)) != (S_IXOTH | S_IROTH) && st.st_uid != kNobodyUid)
    return false;
  for (fs::path dir = fs::absolute(path).parent_path();; dir = dir.parent_path()) {
    if (stat(dir.c_str(), &st) != 0) return true;
    if (!(st.st_mode & S_IXOTH) && st.st_uid != kNobodyUid) return false;
    if (dir == dir.root_path()) return true;
  }
}

// A root user's build often lives where nobody cannot go (/root is 0700, so is a mktemp -d
// folder). Before dropping to nobody, such a program is copied, once per version, into a
// folder nobody can reach: <cache>/sandbox-bin, or /var/cache/kforge/sandbox-bin when the cache
// itself is private. Returns the path to exec, or an error message in *error.
std::string ReachableByNobody(const std::string& program, std::string* error) {
  if (program.find('/') == std::string::npos || NobodyCanExecute(program)) return program;
  std::error_code ec;
  struct stat st;
  if (stat(program.c_str(), &st) != 0) return program;
  fs::path base = "/var/cache/kforge";
  if (Result<fs::path> cache = CacheDir(); cache.ok() && NobodyCanExecute(*cache / "x"))
    base = *cache;
  const fs::path dir = base / "sandbox-bin";
  fs::create_directories(dir, ec);
  chmod(base.c_str(), 0755);
  chmod(dir.c_str(), 0755);
  const std::string key = fmt::format("{}|{}|{}", fs::absolute(program).string(), st.st_size,
                                      st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
  const fs::path staged = dir / (fs::path(program).filename().string() + "-" + HashHex(key));
  if (fs::exists(staged, ec)) return staged.string();
  const fs::path tmp = staged.string() + ".tmp" + std::to_string(getpid());
  fs::copy_file(program, tmp, fs::copy_options::overwrite_existing, ec);
  // A program rewritten while it was copied (a rebuild during a test run) left a torn copy
  // under the old key: copy it again under its new key.
  struct stat after;
  if (!ec && (stat(program.c_str(), &after) != 0 || after.st_size != st.st_size ||
              after.st_mtim.tv_sec != st.st_mtim.tv_sec || after.st_mtim.tv_nsec != st.st_mtim.tv_nsec)) {
    fs::remove(tmp, ec);
    return ReachableByNobody(program, error);
  }
  if (!ec) fs::permissions(tmp, fs::perms(0755), ec);
  if (!ec) fs::rename(tmp, staged, ec);
  if (ec || !NobodyCanExecute(staged)) {
    fs::remove(tmp, ec);
    *error = fmt::format(
        "'{}' lies in a folder user nobody cannot enter, and copying it to {} "
        "failed; build kforge in a folder others can read (chmod o+x on its "
        "parents) or set KFORGE_CACHE_DIR to such a folder",
        program, dir.string());
    return program;
  }
  return staged.string();
}

ProcessResult RunChecked(const ProcessSpec& spec) {
  ProcessResult result;
  result.limits = spec.limits;
  if (spec.argv.empty() || spec.argv[0].empty()) return StartFailed(result, "empty command");
  std::string error;
  ProcessSpec staged_spec;
  const ProcessSpec* run_spec = &spec;
  if (geteuid() == 0 && spec.limits.drop_privileges) {
    std::string program = ReachableByNobody(spec.argv[0], &error);
    if (!error.empty()) return StartFailed(result, error);
    if (program != spec.argv[0]) {
      staged_spec = spec;
      staged_spec.argv[0] = program;
      run_spec = &staged_spec;
    }
  }
  UidLease lease;
  std::string lease_error;
  uid_t own = spec.leased_uid;
  if (geteuid() == 0 && spec.limits.drop_privileges && spec.limits.own_uid && own == 0) {
    lease = LeaseSandboxUid(&lease_error);
    if (lease.held()) own = lease.uid();
  }
  ChildPlan plan = MakePlan(*run_spec, spec.limits.own_uid ? own : 0);
  result.uid = plan.drop_privileges ? plan.uid : geteuid();
  if (!plan.own_uid && !lease_error.empty()) {
    result.isolation_gaps.push_back(fmt::format("user: shared id {} (no id of its own: {})", plan.uid, lease_error));
  }
  error = PrepareWorkdir(spec, plan.drop_privileges, plan.uid);
  if (error.empty()) error = PlanFilesystem(*run_spec, &plan);
  if (!error.empty()) return StartFailed(result, error);
  ParentEnds ends;
  const Clock::time_point start = Clock::now();
  const pid_t pid = StartChild(plan, spec.stdin_fd, &ends, &error);
  if (pid < 0) return StartFailed(result, error);
  result.pid = pid;
  RunningChild child(pid, std::move(ends), spec.stdin_data, &result,
                     {spec.cancel_fd, &spec.on_stdout});
  const Clock::time_point deadline = start + ToDuration(std::max(spec.limits.wall_seconds, 0.0));
  const Stop stop = child.Supervise(deadline, spec.limits.output_kill_bytes, spec.cwd, spec.limits.folder_bytes);
  child.Finish();
  result.wall_seconds = SecondsSince(start);
  Classify(stop, child, plan, &result);
  return result;
}

class SandboxRunner : public ProcessRunner {
 public:
  bool IsSandbox() const override { return true; }
  ProcessResult Run(const ProcessSpec& spec) override {
    try {
      return RunChecked(spec);
    } catch (const std::exception& e) {
      return StartFailed(ProcessResult{}, std::string("internal error: ") + e.what());
    } catch (...) {
      return StartFailed(ProcessResult{}, "internal error");
    }
  }
};

// --- Describing. ------------------------------------------------------------------------------

std::string FormatBytes(uint64_t bytes) {
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0 || value >= 10 || value == std::floor(value)) {
    return fmt::format("{:.0f} {}", value, units[unit]);
  }
  return fmt::format("{:.1f} {}", value, units[unit]);
}

// "11 (SIGSEGV: Segmentation fault)"; sigabbrev_np/sigdescr_np are thread-safe, strsignal not.
std::string SignalText(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* descr = sigdescr_np(sig);
  if (abbrev == nullptr || descr == nullptr) return fmt::format("{} (unknown signal)", sig);
  return fmt::format("{} (SIG{}: {})", sig, abbrev, descr);
}

// Which limit a signal most likely reports.
std::string SignalHint(const ProcessResult& r) {
  const Limits& limits = r.limits;
  if (r.signal == SIGXCPU ||
      (r.signal == SIGKILL && limits.cpu_seconds > 0 && r.cpu_seconds >= limits.cpu_seconds)) {
    return fmt::format(": CPU time limit of {} s reached", limits.cpu_seconds);
  }
  if (r.signal == SIGXFSZ) {
    return fmt::format(": file size limit of {} reached", FormatBytes(limits.file_size_bytes));
  }
  // kforge's own kills end as kTimedOut, kOutputFlood or kFolderFlood; a SIGKILL otherwise came from outside,
  // most often the kernel's out-of-memory killer.
  if (r.signal == SIGKILL) {
    return fmt::format(" from outside kforge (the kernel's out-of-memory killer does this when the machine runs out of "
                       "memory; peak resident memory {}): use less memory, or run fewer jobs at once",
                       FormatBytes(static_cast<uint64_t>(std::max<int64_t>(r.max_rss_kb, 0)) * 1024));
  }
  return "";
}

// Runs `true` in the sandbox with the default limits: what a job gets here.
ProcessResult ProbeSandbox() {
  ProcessSpec spec;
  spec.argv = {"true"};
  spec.env = {{"PATH", kDefaultPath}};
  spec.limits.wall_seconds = 10;
  Result<fs::path> dir = MakeTempDir("isolation-probe");
  if (dir.ok()) spec.cwd = *dir;
  ProcessResult result = RunChecked(spec);
  std::error_code ec;
  if (dir.ok()) fs::remove_all(*dir, ec);
  return result;
}

// The reason recorded for `mechanism` ("network", ...), or why the probe told nothing.
std::string WhyNot(const ProcessResult& probe, const std::string& mechanism) {
  if (probe.end == ProcessResult::End::kStartFailed) return "probe failed: " + probe.start_error;
  for (const std::string& gap : probe.isolation_gaps) {
    if (gap.rfind(mechanism + ": ", 0) == 0) return gap.substr(mechanism.size() + 2);
  }
  return "not reported";
}

std::string NetworkLine(const ProcessResult& probe) {
  if (!probe.network_private) return "network: NOT isolated, " + WhyNot(probe, "network");
  if (geteuid() == 0) return "network: private namespace (unshare CLONE_NEWNET), loopback down";
  return "network: private namespace (unshare CLONE_NEWUSER|CLONE_NEWNET, own uid/gid mapped), "
         "loopback down";
}

std::string ProcessesLine(const ProcessResult& probe) {
  if (!probe.pid_namespace) {
    return "processes: NOT in a PID namespace: " + WhyNot(probe, "pid namespace");
  }
  std::string proc = "a fresh /proc shows only them";
  for (const std::string& gap : probe.isolation_gaps) {
    if (gap.rfind("proc: ", 0) == 0) proc = gap.substr(6);
  }
  return "processes: own PID and IPC namespace under a trusted init (PID 1): every process of "
         "the run, setsid() or not, is killed when the program ends; " +
         proc;
}

std::string FilesystemLine(const ProcessResult& probe) {
  if (!probe.private_fs) return "filesystem: NOT private, " + WhyNot(probe, "filesystem");
  return "filesystem: private view: everything read-only (mount_setattr, recursive), fresh tmpfs "
         "on /tmp, /var/tmp, /dev/shm, $HOME and /root (a program's install prefix and ~/.local "
         "kept; 1 GiB and 65536 files each), /dev kept; writable only the working directory (bounded where a job "
         "sets folder_bytes) and the caches a job names; oom_score_adj 1000";
}

std::string SeccompLine(const ProcessResult& probe) {
  if (!probe.seccomp) return "seccomp: NOT active: " + WhyNot(probe, "seccomp");
  return "seccomp: filter loaded before exec: " + DescribeSeccompFilter();
}

std::string UserLine() {
  if (geteuid() == 0) {
    std::string range_error;
    const UidRange range = SandboxUidRange(&range_error);
    return fmt::format(
        "user: nobody (65534) when drop_privileges (default), or with own_uid (kforge-worker jobs, warm Python workers) an id of "
        "its own leased from {}..{} (KFORGE_SANDBOX_UIDS{}); group nogroup, no supplementary groups, no_new_privs",
        range.first, range.first + range.count - 1, range_error.empty() ? "" : ": " + range_error);
  }
  return fmt::format("user: the calling user (uid {}), not root so no switch; no_new_privs",
                     geteuid());
}

}  // namespace

std::string ProcessResult::Describe() const {
  switch (end) {
    case End::kExited:
      return fmt::format("exited with code {}", exit_code);
    case End::kSignaled:
      return "killed by signal " + SignalText(signal) + SignalHint(*this);
    case End::kTimedOut:
      return fmt::format("timed out after {:.1f} s", limits.wall_seconds);
    case End::kOutputFlood:
      return fmt::format("killed: wrote {} of output (limit {})",
                         FormatBytes(out_total + err_total), FormatBytes(limits.output_kill_bytes));
    case End::kFolderFlood:
      return fmt::format("killed: its working folder grew past its limit of {} ({} counted, each file at least {})",
                         FormatBytes(limits.folder_bytes), FormatBytes(folder_bytes), FormatBytes(kFootprintEntryBytes));
    case End::kStartFailed:
      return "could not start: " + start_error;
  }
  return "unknown end";
}

std::unique_ptr<ProcessRunner> NewSandboxRunner() {
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);  // see the header: killed descendants come to us
  return std::make_unique<SandboxRunner>();
}

std::vector<std::string> DescribeIsolation() {
  int subreaper = 0;
  prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0);
  const ProcessResult probe = ProbeSandbox();
  return {
      NetworkLine(probe),
      UserLine(),
      ProcessesLine(probe),
      FilesystemLine(probe),
      SeccompLine(probe),
      "limits: address space, CPU time, file size, processes+threads (RLIMIT_NPROC), no core "
      "files; wall clock and output size watched by the parent",
      std::string("process group: own session and process group, SIGKILLed as a group at exit, "
                  "timeout or flood; killed descendants reaped ") +
          (subreaper ? "(child subreaper)" : "(not yet: no runner created)"),
  };
}

UidLease LeaseOwnUid(ProcessSpec* spec, std::string* gap) {
  if (geteuid() != 0 || !spec->limits.drop_privileges) return {};
  std::string error;
  UidLease lease = LeaseSandboxUid(&error);
  if (!lease.held()) {
    *gap = fmt::format("user: shared id {} (no id of its own: {})", spec->limits.sandbox_uid, error);
    return lease;
  }
  spec->limits.sandbox_uid = lease.uid();
  spec->limits.own_uid = true;
  spec->leased_uid = lease.uid();
  return lease;
}

}  // namespace kforge
