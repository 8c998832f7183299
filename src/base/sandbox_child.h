// Internal to the process runner (subprocess.cc): what the forked child does before exec, and
// the plan the parent prepares for it. The parent is multithreaded, so after fork() the child
// may only make async-signal-safe calls: no malloc, no locks. Everything it needs (strings,
// rlimit values, the seccomp program) is in the ChildPlan, built before fork().
//
// Processes of one sandboxed run, when PID namespaces are available:
//
//   kforge (parent)
//     outer child   fork(); own session and process group; enters the namespaces; waits for
//                   the init and ends the way it ended; never execs
//       init        clone(CLONE_VM | CLONE_VFORK): PID 1 of the new PID namespace; builds the
//                   private mounts; starts the target, reaps everything, reports the target's
//                   wait status, exits when the target ends (the kernel then kills the rest of
//                   the namespace); never execs
//         target    clone(CLONE_VM | CLONE_VFORK): rlimits, working directory, user nobody,
//                   no_new_privs, seccomp; execs
//
// The clones share the outer child's memory (no copy of a large parent's page tables); each
// starter is suspended until its clone execs or exits. Without a PID namespace the outer child
// itself becomes the target.
#ifndef KFORGE_BASE_SANDBOX_CHILD_H_
#define KFORGE_BASE_SANDBOX_CHILD_H_

#include <linux/filter.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

// The child's report pipe carries fixed-size Report records (written atomically, 12 bytes <
// PIPE_BUF). Stages before kSession are information; any other stage means the child failed
// there, with `err` as errno, and exited with code 127 without running the program.
enum class Stage : int32_t {
  kNetworkPrivate,
  kNetworkShared,  // err: why not
  kProcessesPrivate,
  kProcessesShared,  // err
  kFilesystemPrivate,
  kFilesystemShared,  // err; detail: the FsStep that failed
  kProcShared,        // the host's /proc stayed (err)
  kSeccompActive,
  kSeccompInactive,  // err; 0 when the parent had no filter (ChildPlan::seccomp_error)
  kTargetStatus,     // detail: the target's wait status, sent by the init
  // Failures.
  kSession,
  kLimits,
  kWorkdir,
  kUser,
  kFds,
  kFilesystem,  // detail: FsStep | index << 8 (index into ChildPlan::tmpfs or binds)
  kInit,
  kExec,
};

// Steps of the private filesystem view, for reports.
enum FsStep : int32_t {
  kFsNamespace,    // unshare(CLONE_NEWNS)
  kFsIdMap,        // writing uid_map/gid_map of the user namespace (a tmpfs needs mapped ids)
  kFsPropagation,  // making every mount private to the new namespace
  kFsClone,        // open_tree(): copies of the folders that stay visible
  kFsReadOnly,     // mount_setattr(): everything read-only
  kFsTmpfs,        // a private tmpfs
  kFsBind,         // move_mount(): a visible folder back at its path
};

struct Report {
  Stage stage;
  int32_t err;
  int32_t detail;
};

struct LimitSetting {
  int resource;
  rlimit value;
};

// A folder that stays visible at its own path under the private filesystem view.
struct Bind {
  std::string path;  // canonical
  bool writable;
};

inline constexpr size_t kMaxBinds = 56;  // cwd, 16 + 16 listed, program folders and prefixes

// Everything the child uses, built by the parent before fork().
struct ChildPlan {
  std::vector<std::string> exec_paths;  // tried in order with execve(), like execvp()
  std::vector<std::string> args, env;   // storage for argv and envp
  std::vector<char*> argv, envp;        // null-terminated
  std::string path_searched;            // for the error message
  std::string cwd;                      // canonical; empty: stay where the parent is
  std::string uid_map, gid_map;         // identity maps for an unprivileged user namespace
  bool root = false;
  bool drop_privileges = false;
  uid_t uid = 65534;  // when drop_privileges
  bool own_uid = false;  // uid was leased for this run: no task runs as it yet
  bool isolate_network = false;
  bool isolate_processes = false;  // PID + IPC namespace under an init
  bool private_fs = false;
  std::vector<Bind> binds;          // parents before children; at most kMaxBinds
  std::vector<std::string> tmpfs;   // where private tmpfs are mounted
  std::vector<std::string> hidden_homes;  // the homes among them ($HOME, /root)
  std::string tmpfs_options;        // mount data for them
  std::vector<std::string> mkdirs;  // mount points to create in those tmpfs, in order
  bool want_seccomp = false;
  const sock_fprog* seccomp = nullptr;  // null: no filter (seccomp_error says why)
  std::string seccomp_error;
  std::vector<LimitSetting> limits;
  rlimit nproc_shared{};  // RLIMIT_NPROC when the child shares the user's process count
  rlimit nproc_own{};     // RLIMIT_NPROC inside a fresh user namespace (counts only the child's)
  pid_t parent = 0;
  int max_fd = 1024;
};

// The child's ends of its pipes; the parent keeps the other ends.
struct ChildFds {
  int stdin_read, stdout_write, stderr_write, report_write;
};

// Runs in the child right after fork(): confines it as the plan says and execs the program,
// or exits with 127 after a failure Report. Async-signal-safe.
[[noreturn]] void ChildMain(const ChildPlan& plan, const ChildFds& fds);

}  // namespace kforge

#endif  // KFORGE_BASE_SANDBOX_CHILD_H_
