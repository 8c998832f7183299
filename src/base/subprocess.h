// Running a child process under limits: the sandbox every candidate compile and run goes
// through (EVALUATION.md section 1).
//
// The child gets its own process group, resource limits (address space, CPU time, file size,
// process count, no core files), its own working directory, no network (a private network
// namespace), and, when kforge runs as root, an unprivileged user (nobody). Where the OS allows
// (as root, or in a user namespace of its own otherwise), it also gets:
//   - its own PID and IPC namespaces under a small trusted init (PID 1, never execs) that
//     starts the program and ends with it: every process left in the namespace, setsid() or
//     not, is killed by the kernel when the program exits or is killed;
//   - a private view of the filesystem: everything read-only, fresh tmpfs on /tmp, /var/tmp and
//     /dev/shm (gone with the job), a fresh /proc that shows only the job's processes, /dev
//     kept (device nodes still open read-write); writable only `cwd` and `writable_paths`;
//   - a seccomp filter that refuses what no job needs (base/seccomp_filter.h).
// What could not be applied is recorded in the ProcessResult (and DescribeIsolation() says what
// this machine allows); the child then runs with the rest.
// Its stdout and stderr are read concurrently; beyond `output_bytes` per stream the rest is
// counted and discarded, beyond `output_kill_bytes` in total the child is killed (a flood).
// A child that outlives `wall_seconds` is killed with its whole process group.
// Run() never throws and never waits without a bound.
//
// Process-wide effect: NewSandboxRunner() marks this process a child subreaper
// (PR_SET_CHILD_SUBREAPER), so that descendants of a child, once killed, are re-parented to
// this process and reaped by Run() instead of lingering as zombies under a PID 1 that may not
// reap (containers). Orphans of other children this process starts also come here.
//
// Without a PID namespace (isolate_processes off, or refused by the OS) a descendant that
// leaves the child's process group (setsid, setpgid) escapes the group kill and may outlive
// the run; ProcessResult::pid_namespace says whether that gap was closed.
//
// Thread-safety: a ProcessRunner may be used from several threads at once.
#ifndef KFORGE_BASE_SUBPROCESS_H_
#define KFORGE_BASE_SUBPROCESS_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/sandbox_uids.h"

namespace kforge {

// How often a running child's working folder is measured against Limits::folder_bytes. A tmpfs
// takes a few GB/s: what a flood writes past the limit is bounded by this slice.
inline constexpr int kFolderPollMs = 20;

struct Limits {
  double wall_seconds = 60;  // killed (with its group) after this
  // RLIMIT_CPU: SIGXCPU at the limit, SIGKILL one second later; 0 = unlimited.
  double cpu_seconds = 120;
  uint64_t address_space_bytes = 8ull << 30;  // RLIMIT_AS; 0 = unlimited (CUDA needs that)
  uint64_t file_size_bytes = 1ull << 30;      // RLIMIT_FSIZE (SIGXFSZ); 0 = unlimited
  uint64_t output_bytes = 256 << 10;          // kept per stream (stdout, stderr)
  uint64_t output_kill_bytes = 64ull << 20;   // stdout+stderr total that is a flood; 0 = none
  // The most the working folder (cwd) may hold, what it held at the start included, while the
  // child runs (FolderFootprint, measured every kFolderPollMs): past it the child is ended
  // (End::kFolderFlood). A job folder lies on the host's /dev/shm, which is RAM that no process
  // owns: the file size limit bounds each file, this their sum and their number. 0 = none.
  uint64_t folder_bytes = 0;
  // Processes + threads (RLIMIT_NPROC; enforced as nobody or in a user namespace, not as root);
  // 0 = unlimited.
  int max_processes = 512;
  bool isolate_network = true;  // private network namespace where possible
  bool drop_privileges = true;  // as root: run as nobody
  // The user id dropped to (group nogroup, 65534). kforge runs PyTorch baselines as 65533 so
  // that candidates (nobody) cannot write the baselines' compile cache.
  uint32_t sandbox_uid = 65534;
  // As root: a user id of its own for this run instead of sandbox_uid, leased from kforge's
  // sandbox range (base/sandbox_uids.h) until the run ends (ProcessSpec::leased_uid, or leased
  // by Run), group nogroup. RLIMIT_NPROC counts per user id: a child that forks up to its
  // limit then takes no process or thread from the runs beside it. Where no id can be leased
  // the run uses sandbox_uid and isolation_gaps says why.
  bool own_uid = false;
  // Own PID and IPC namespaces under a trusted init: nothing the child starts outlives it.
  bool isolate_processes = true;
  // Read-only system, private /tmp, /var/tmp, /dev/shm and /proc; see ProcessSpec.
  bool private_filesystem = true;
  bool seccomp = true;             // the seccomp filter (off only for trusted tools)
  bool allow_perf_events = false;  // the filter lets perf_event_open through (profilers)
};

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is a path or a name on PATH
  std::filesystem::path cwd;      // must exist; made writable for the child
                                  // (as root: chowned to nobody, so it must belong
                                  // to this run); empty = the parent's cwd, which
                                  // stays read-only, as does "/"
  // Folders (existing) the child may write besides cwd under a private filesystem, such as
  // compile caches; their owner is the caller's business. At most 16, not "/".
  std::vector<std::filesystem::path> writable_paths;
  // Folders the child must see (read-only) even where they lie below a private tmpfs (/tmp,
  // /var/tmp, /dev/shm), such as a lock file's folder. The program's own folder is kept
  // visible without being listed. At most 16.
  std::vector<std::filesystem::path> readable_paths;
  std::map<std::string, std::string> env;  // the child's whole environment
  std::string stdin_data;                  // written to the child's stdin, then closed
  Limits limits;
  // A conversation with a resident child (the warm Python worker, eval/python_zygote.h); all
  // three are optional and the caller keeps owning the descriptors.
  //   stdin_fd   >= 0: the child's stdin is this descriptor (the read end of a pipe the caller
  //              keeps writing) instead of stdin_data.
  //   cancel_fd  >= 0: once readable (written to or its other end closed), the child is ended
  //              as though its wall-clock limit had passed (End::kTimedOut).
  //   on_stdout  called from Run()'s thread with every chunk the child writes on stdout, kept
  //              or not (out/out_total are filled as usual).
  int stdin_fd = -1;
  int cancel_fd = -1;
  // With limits.own_uid: an id the caller leased for this run (LeaseSandboxUid; it keeps the
  // lease until Run returns), so that it can prepare folders for that id; 0: Run leases one.
  uint32_t leased_uid = 0;
  std::function<void(std::string_view)> on_stdout;
};

struct ProcessResult {
  enum class End { kExited, kSignaled, kTimedOut, kOutputFlood, kFolderFlood, kStartFailed };
  End end = End::kStartFailed;
  int exit_code = -1;  // kExited
  int signal = 0;      // kSignaled (also the signal that ended a timed-out child)
  double wall_seconds = 0;
  double cpu_seconds = 0;  // user + system of the child and its descendants
  int64_t max_rss_kb = 0;
  std::string out, err;                   // kept output, at most output_bytes each
  uint64_t out_total = 0, err_total = 0;  // bytes the child wrote, kept or not
  uint64_t folder_bytes = 0;  // kFolderFlood: what its working folder held when it was ended
  std::string start_error;                // kStartFailed: why
  int pid = 0;                   // the child's process id, which is also its process group id
  bool network_private = false;  // the child ran in a private network namespace
  bool pid_namespace = false;    // ... in its own PID and IPC namespace (nothing outlived it)
  bool private_fs = false;       // ... with the private, read-only filesystem view
  bool seccomp = false;          // ... under the seccomp filter
  // One line per mechanism the limits asked for that was not active, with why
  // ("pid namespace: unshare: Operation not permitted").
  std::vector<std::string> isolation_gaps;
  Limits limits;  // the limits the child ran under
  uint32_t uid = 0;  // the user id it ran as (as root with drop_privileges; else the caller's)

  bool Succeeded() const { return end == End::kExited && exit_code == 0; }
  // One line for people: "exited with code 3", "killed by signal 11 (SIGSEGV: segmentation
  // fault)", "timed out after 10.0 s", "killed: wrote 70 MB of output (limit 64 MB)", ...
  std::string Describe() const;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Runs spec.argv to its end under spec.limits. Everything that can go wrong with the child,
  // including failing to start it, is reported in the result; kStartFailed has start_error.
  // Called from several threads at once (the evaluator runs reference jobs side by side, the
  // compile farm compiles in parallel): an implementation that keeps state locks it.
  virtual ProcessResult Run(const ProcessSpec& spec) = 0;
  // True for the real sandbox (NewSandboxRunner), whose isolation a resident worker may rely on
  // being the same for a process it starts itself; fakes and wrappers say false.
  virtual bool IsSandbox() const { return false; }
};

// The real sandbox.
std::unique_ptr<ProcessRunner> NewSandboxRunner();

// An id of its own for `spec`'s run (base/sandbox_uids.h), leased here and set as the run's
// user (limits.sandbox_uid, own_uid, leased_uid), so that the caller can prepare folders for it
// before the run; the caller keeps the lease until the run ends. Only as root with
// drop_privileges; not held then when every id is taken or the lock file cannot be opened
// (*gap says so, and the run keeps its user).
UidLease LeaseOwnUid(ProcessSpec* spec, std::string* gap);

// What isolation the sandbox can apply on this machine, one line per mechanism, each saying
// active or not and why, for `kforge doctor` ("network: private namespace (unshare
// CLONE_NEWNET)", "user: nobody", "processes: ...", "filesystem: ...", "seccomp: ..."). Probes
// by running `true` in the sandbox.
std::vector<std::string> DescribeIsolation();

}  // namespace kforge

#endif  // KFORGE_BASE_SUBPROCESS_H_
