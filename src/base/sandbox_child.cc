// The forked child of a sandboxed run (see sandbox_child.h for the processes). Async-signal-
// safe calls only: system calls on memory the parent prepared, no malloc, no locks, no libc
// state shared between threads. Namespace and mount calls go through syscall() where libc may
// lack the wrapper.
#include "base/sandbox_child.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

// The new mount API (Linux 5.2; mount_setattr 5.12). Older headers lack some names; on an older
// kernel the calls fail with ENOSYS and the child keeps the shared view.
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef SYS_open_tree
#define SYS_open_tree -1
#endif
#ifndef SYS_move_mount
#define SYS_move_mount -1
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr -1
#endif

namespace kforge {
namespace {

constexpr gid_t kNobodyGid = 65534;

// struct mount_attr of <linux/mount.h>, which cannot be included beside <sys/mount.h>.
struct MountAttr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};

// What the child's namespaces turned out to be.
struct Namespaces {
  bool own_userns = false;  // a user namespace of its own (not root)
  bool pid = false;         // CLONE_NEWPID + CLONE_NEWIPC: the next child is PID 1 there
  bool mount = false;       // CLONE_NEWNS
  bool private_fs = false;  // the private view can be built (ids mapped where needed)
};

void ChildReport(int fd, Stage stage, int err, int detail = 0) {
  Report report{stage, err, detail};
  ssize_t ignored = write(fd, &report, sizeof report);
  (void)ignored;
}

[[noreturn]] void ChildFail(int fd, Stage stage, int err, int detail = 0) {
  ChildReport(fd, stage, err, detail);
  _exit(127);
}

// Undoes what fork() copied from the parent: ignored signals and the signal mask survive exec.
void ChildResetSignals() {
  struct sigaction action = {};
  action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &action, nullptr);  // KILL/STOP: EINVAL
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Dies with the parent (the thread that forked); true unless the parent is gone already.
bool ChildDieWithParent(pid_t parent) {
  return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0 && getppid() == parent;
}

bool ChildWriteFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// Puts stdin/stdout/stderr on 0/1/2 and the report pipe on 3 (close-on-exec), closes every
// other fd: the outer child and the init live on without exec and must not hold the fds of
// other runs (their pipes would not reach EOF). Returns the report fd, or -1.
int ChildSetUpFds(const ChildFds& fds, int max_fd) {
  // First lift all four above 3, so that no dup2() below overwrites one still needed.
  const int wanted[4] = {fds.stdin_read, fds.stdout_write, fds.stderr_write, fds.report_write};
  int lifted[4];
  for (int i = 0; i < 4; ++i) {
    lifted[i] = fcntl(wanted[i], F_DUPFD_CLOEXEC, 10);
    if (lifted[i] < 0) return -1;
  }
  for (int i = 0; i < 4; ++i) {
    if (dup2(lifted[i], i) != i) return -1;  // dup2 leaves the copy without CLOEXEC
  }
  if (fcntl(3, F_SETFD, FD_CLOEXEC) != 0) return -1;
  if (close_range(4, ~0u, 0) != 0) {
    for (int fd = 4; fd <= max_fd; ++fd) close(fd);
  }
  return 3;
}

// --- Namespaces. ------------------------------------------------------------------------------

// Without "deny" the kernel refuses an unprivileged gid_map. The files belong to root while
// the process is not dumpable (a parent that changed its uid without exec), so it is dumpable
// for these writes. A failed map leaves the ids unmapped inside: the network stays private,
// but the private filesystem cannot be built (files of unmapped ids cannot be created).
// Returns 0 or the errno of the first failure.
int ChildMapIds(const ChildPlan& plan) {
  const int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  if (dumpable != 1) prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  int err = 0;
  ChildWriteFile("/proc/self/setgroups", "deny");
  if (!ChildWriteFile("/proc/self/uid_map", plan.uid_map)) err = errno;
  if (!ChildWriteFile("/proc/self/gid_map", plan.gid_map) && err == 0) err = errno;
  if (dumpable == 0) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  return err;
}

// As root plain unshare() calls; otherwise first a user namespace that maps the user's own ids
// (so files keep their owners), inside which the child holds the capabilities the other
// namespaces need. Reports each mechanism the plan asks for.
Namespaces ChildEnterNamespaces(const ChildPlan& plan, int report) {
  Namespaces ns;
  const int process_flags = plan.isolate_processes ? CLONE_NEWPID | CLONE_NEWIPC : 0;
  const int mount_flags = plan.isolate_processes || plan.private_fs ? CLONE_NEWNS : 0;
  if (!plan.isolate_network && process_flags == 0 && mount_flags == 0) return ns;
  int userns_err = 0, map_err = 0;
  if (!plan.root) {
    if (unshare(CLONE_NEWUSER) == 0) {
      ns.own_userns = true;
      map_err = ChildMapIds(plan);
    } else {
      userns_err = errno;
    }
  }
  auto enter = [&](int flags) {
    return userns_err != 0 ? userns_err : unshare(flags) == 0 ? 0 : errno;
  };
  if (plan.isolate_network) {
    const int err = enter(CLONE_NEWNET);
    ChildReport(report, err == 0 ? Stage::kNetworkPrivate : Stage::kNetworkShared, err);
  }
  if (process_flags == 0 && mount_flags == 0) return ns;
  const int err = enter(process_flags | mount_flags);
  ns.pid = err == 0 && process_flags != 0;
  ns.mount = err == 0;
  if (process_flags != 0) {
    ChildReport(report, ns.pid ? Stage::kProcessesPrivate : Stage::kProcessesShared, err);
  }
  if (err != 0 && plan.private_fs) ChildReport(report, Stage::kFilesystemShared, err, kFsNamespace);
  ns.private_fs = ns.mount && plan.private_fs && map_err == 0;
  if (ns.mount && plan.private_fs && map_err != 0) {
    ChildReport(report, Stage::kFilesystemShared, map_err, kFsIdMap);
  }
  return ns;
}

// --- The private filesystem view. -------------------------------------------------------------

int ChildSetReadOnly(int dir_fd, const char* path, unsigned flags) {
  MountAttr attr = {};
  attr.attr_set = MOUNT_ATTR_RDONLY;
  return syscall(SYS_mount_setattr, dir_fd, path, flags | AT_RECURSIVE, &attr, sizeof attr) == 0
             ? 0
             : errno;
}

void ChildCloseTrees(const int* trees, size_t n) {
  for (size_t i = 0; i < n; ++i) close(trees[i]);
}

// Detached copies (with their submounts) of the folders that stay visible, read-only where the
// bind is; taken before anything is hidden. Returns 0 or errno (then nothing is left open).
int ChildCloneTrees(const ChildPlan& plan, int* trees) {
  for (size_t i = 0; i < plan.binds.size(); ++i) {
    const Bind& bind = plan.binds[i];
    trees[i] = static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, bind.path.c_str(),
                                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
    int err = trees[i] < 0 ? errno : 0;
    if (err == 0 && !bind.writable) err = ChildSetReadOnly(trees[i], "", AT_EMPTY_PATH);
    if (err != 0) {
      ChildCloseTrees(trees, trees[i] < 0 ? i : i + 1);
      return err;
    }
  }
  return 0;
}

// Clones the visible folders and makes the whole tree read-only, atomically. Nothing the child
// sees has changed until this succeeds, so a failure (an old kernel: ENOSYS) is reported and
// the child keeps the shared view. Returns true when the view is read-only now.
bool ChildHideSystem(const ChildPlan& plan, int report, int* trees) {
  int err = ChildCloneTrees(plan, trees);
  if (err != 0) {
    ChildReport(report, Stage::kFilesystemShared, err, kFsClone);
    return false;
  }
  err = ChildSetReadOnly(AT_FDCWD, "/", 0);
  if (err != 0) {
    ChildCloseTrees(trees, plan.binds.size());
    ChildReport(report, Stage::kFilesystemShared, err, kFsReadOnly);
    return false;
  }
  return true;
}

// Private tmpfs, mount points for the visible folders, then the folders. From the read-only
// step on, a failure is fatal: the job's own folders would be missing or read-only.
void ChildPrivateMounts(const ChildPlan& plan, int report, const int* trees) {
  for (size_t i = 0; i < plan.tmpfs.size(); ++i) {
    if (mount("tmpfs", plan.tmpfs[i].c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              plan.tmpfs_options.c_str()) != 0) {
      ChildFail(report, Stage::kFilesystem, errno, kFsTmpfs | static_cast<int>(i) << 8);
    }
  }
  for (const std::string& dir : plan.mkdirs) mkdir(dir.c_str(), 0755);  // EEXIST is fine
  for (size_t i = 0; i < plan.binds.size(); ++i) {
    if (syscall(SYS_move_mount, trees[i], "", AT_FDCWD, plan.binds[i].path.c_str(),
                MOVE_MOUNT_F_EMPTY_PATH) != 0) {
      ChildFail(report, Stage::kFilesystem, errno, kFsBind | static_cast<int>(i) << 8);
    }
    close(trees[i]);
  }
}

// In the child's own mount namespace: first nothing propagates back to the host, then the
// private view (sandbox_child.h, subprocess.h) where the plan asks for it, and a /proc of the
// child's PID namespace where `fresh_proc`. Reports what is active.
void ChildMounts(const ChildPlan& plan, const Namespaces& ns, int report, bool fresh_proc) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    const int err = errno;
    if (ns.private_fs) ChildReport(report, Stage::kFilesystemShared, err, kFsPropagation);
    if (fresh_proc) ChildReport(report, Stage::kProcShared, err);
    return;
  }
  int trees[kMaxBinds];
  const bool hidden = ns.private_fs && ChildHideSystem(plan, report, trees);
  if (fresh_proc &&
      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    ChildReport(report, Stage::kProcShared, errno);
  }
  if (!hidden) return;
  ChildPrivateMounts(plan, report, trees);
  ChildReport(report, Stage::kFilesystemPrivate, 0);
}

// --- The target. ------------------------------------------------------------------------------

bool ChildSetLimits(const ChildPlan& plan, bool own_userns) {
  for (const LimitSetting& limit : plan.limits) {
    if (setrlimit(limit.resource, &limit.value) != 0) return false;
  }
  const rlimit& nproc = own_userns ? plan.nproc_own : plan.nproc_shared;
  return setrlimit(RLIMIT_NPROC, &nproc) == 0;
}

// Raw syscalls: they change this (only) thread, with no libc bookkeeping across threads.
bool ChildBecomeNobody(uid_t uid) {
  return syscall(SYS_setgroups, 0, nullptr) == 0 &&
         syscall(SYS_setresgid, kNobodyGid, kNobodyGid, kNobodyGid) == 0 &&
         syscall(SYS_setresuid, uid, uid, uid) == 0;
}

// No setuid binary may give privileges back (also what seccomp needs without CAP_SYS_ADMIN),
// and the child dies with its parent. PDEATHSIG must be set after the uid change, which
// clears it.
// Returns 0 or errno.
int ChildLockDown(pid_t parent) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return errno;
  return getppid() == parent ? 0 : ESRCH;  // the parent died before PDEATHSIG was armed
}

// Last step before exec: the seccomp filter, which then also covers everything the program
// starts. A kernel that refuses it leaves the program unfiltered, reported.
void ChildLoadSeccomp(const ChildPlan& plan, int report) {
  if (!plan.want_seccomp) return;
  if (plan.seccomp == nullptr) return ChildReport(report, Stage::kSeccompInactive, 0);
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, plan.seccomp, 0, 0) != 0) {
    return ChildReport(report, Stage::kSeccompInactive, errno);
  }
  ChildReport(report, Stage::kSeccompActive, 0);
}

// execvpe() would search the *parent's* PATH; the child's PATH (spec.env) is what counts, so
// the candidates were resolved by the parent and are tried here in order, execvp()-style:
// missing files are skipped, a permission error is remembered, any other error stops.
[[noreturn]] void ChildExec(const ChildPlan& plan, int report_fd) {
  int err = ENOENT;
  bool denied = false;
  for (const std::string& path : plan.exec_paths) {
    execve(path.c_str(), plan.argv.data(), plan.envp.data());
    if (errno == EACCES) {
      denied = true;
    } else if (errno != ENOENT && errno != ENOTDIR) {
      err = errno;
      break;
    }
  }
  ChildFail(report_fd, Stage::kExec, (err == ENOENT && denied) ? EACCES : err);
}

// Limits, working directory, user, lock-down, filter, exec. `parent` is the pid the target's
// parent has in the target's PID namespace (1: the init).
[[noreturn]] void ChildRunTarget(const ChildPlan& plan, const Namespaces& ns, pid_t parent) {
  const int report = 3;
  if (!ChildSetLimits(plan, ns.own_userns)) ChildFail(report, Stage::kLimits, errno);
  if (!plan.cwd.empty() && chdir(plan.cwd.c_str()) != 0) ChildFail(report, Stage::kWorkdir, errno);
  if (plan.drop_privileges && !ChildBecomeNobody(plan.uid)) ChildFail(report, Stage::kUser, errno);
  if (const int err = ChildLockDown(parent); err != 0) ChildFail(report, Stage::kSession, err);
  ChildLoadSeccomp(plan, report);
  ChildExec(plan, report);
}

// --- The init and the outer child. ------------------------------------------------------------

// The init and the target start with clone(CLONE_VM | CLONE_VFORK): they share the outer
// child's memory instead of copying its page tables (the outer child is a fork of the parent,
// which may be large; with fork() a 1 GB parent cost ~0.4 s more per run), and the process that
// starts one is suspended until it execs or exits, so two of them never run at once on that
// memory. Each runs on a stack of its own, mapped by the outer child.
constexpr size_t kStackBytes = 256 << 10;

struct InitArgs {
  const ChildPlan* plan;
  Namespaces ns;
  char* target_stack;  // top of the target's stack
};

pid_t ChildSpawn(int (*entry)(void*), char* stack_top, InitArgs* args) {
  return clone(entry, stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, args);
}

int TargetEntry(void* args) {
  const InitArgs& a = *static_cast<InitArgs*>(args);
  ChildRunTarget(*a.plan, a.ns, /*parent=*/1);
}

// PID 1 of the new namespace: builds the mounts (a fresh /proc needs to be mounted from
// inside), starts the target, reaps whatever ends in the namespace, and exits when the target
// has ended, after sending its wait status through the report pipe. The kernel then kills
// every process left in the namespace. Signals from inside the namespace cannot touch it (it
// has no handlers); from outside, the group kill and PDEATHSIG can.
[[noreturn]] void ChildInit(InitArgs* args) {
  const int report = 3;
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);  // the outer child's death ends the namespace
  ChildMounts(*args->plan, args->ns, report, /*fresh_proc=*/true);
  const pid_t target = ChildSpawn(TargetEntry, args->target_stack, args);
  if (target < 0) ChildFail(report, Stage::kInit, errno);
  for (int fd = 0; fd < 3; ++fd) close(fd);
  int status = 0;
  for (;;) {
    int got_status = 0;
    const pid_t got = waitpid(-1, &got_status, __WALL);
    if (got == target) {
      status = got_status;
      break;
    }
    if (got < 0 && errno != EINTR) break;  // ECHILD: cannot happen while the target lives
  }
  ChildReport(report, Stage::kTargetStatus, 0, status);
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

int InitEntry(void* args) { ChildInit(static_cast<InitArgs*>(args)); }

// The outer child once the init runs: waits for it and ends the same way, so that the parent's
// wait4() sees the usage of everything the namespace ran (the exact status of the target comes
// through the report pipe).
[[noreturn]] void ChildAwaitInit(pid_t init) {
  for (int fd = 0; fd < 3; ++fd) close(fd);
  int status = 0;
  while (waitpid(init, &status, 0) < 0) {
    if (errno != EINTR) _exit(127);
  }
  if (WIFSIGNALED(status)) kill(getpid(), WTERMSIG(status));  // no core: RLIMIT_CORE is 0
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

}  // namespace

[[noreturn]] void ChildMain(const ChildPlan& plan, const ChildFds& fds) {
  ChildResetSignals();
  const rlimit no_core = {0, 0};  // this copy of the parent must never dump core
  setrlimit(RLIMIT_CORE, &no_core);
  // The kernel's out-of-memory killer takes the job first: what a job keeps in a tmpfs is no
  // process's memory, so without this the largest process when RAM runs out may be the judge's.
  // Raising one's own score needs no privilege; the job's processes inherit it.
  if (const int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC); oom >= 0) {
    (void)!write(oom, "1000", 4);
    close(oom);
  }
  if (!ChildDieWithParent(plan.parent)) ChildFail(fds.report_write, Stage::kSession, ESRCH);
  if (setsid() < 0) ChildFail(fds.report_write, Stage::kSession, errno);
  const int report = ChildSetUpFds(fds, plan.max_fd);
  if (report < 0) ChildFail(fds.report_write, Stage::kFds, errno);
  const Namespaces ns = ChildEnterNamespaces(plan, report);
  if (!ChildDieWithParent(plan.parent)) ChildFail(report, Stage::kSession, ESRCH);
  if (!ns.pid) {
    if (ns.mount) ChildMounts(plan, ns, report, /*fresh_proc=*/false);
    ChildRunTarget(plan, ns, plan.parent);
  }
  void* stacks = mmap(nullptr, 2 * kStackBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stacks == MAP_FAILED) ChildFail(report, Stage::kInit, errno);
  char* base = static_cast<char*>(stacks);  // the init's stack, then the target's
  InitArgs args{&plan, ns, base + 2 * kStackBytes};
  const pid_t init = ChildSpawn(InitEntry, base + kStackBytes, &args);  // back once it exited
  if (init < 0) ChildFail(report, Stage::kInit, errno);
  ChildAwaitInit(init);
}

}  // namespace kforge
