// Builds the seccomp programs with libseccomp. libseccomp 2.5 exports only to a file
// descriptor, so the program goes through a memfd and is read back into memory; the child then
// hands that memory to prctl(PR_SET_SECCOMP) without calling into libseccomp after fork().
#include "base/seccomp_filter.h"

#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace kforge {
namespace {

// Refused with EPERM whatever their arguments. Names this architecture lacks are skipped.
constexpr const char* kRefused[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",  // other processes
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",  // bypasses filters
    "bpf",
    "userfaultfd",  // kernel exploits
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",  // the machine
    "mount",
    "umount2",
    "pivot_root",
    "unshare",
    "setns",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",  // the sandbox
    "keyctl",
    "add_key",
    "request_key",  // kernel keyrings
    "name_to_handle_at",
    "open_by_handle_at",  // path bypass
    "clock_settime",
    "settimeofday",
    "adjtimex",
    "clock_adjtime",  // the clocks
};

// clone() with any of these would give the child a namespace of its own (and, with a user
// namespace, every capability inside it).
constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,    CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER,  CLONE_NEWPID, CLONE_NEWNET,
                                             CLONE_NEWCGROUP};

std::string ErrText(const char* what, int rc) {
  return std::string(what) + ": " + std::generic_category().message(rc < 0 ? -rc : rc);
}

// Adds the rules; returns an error message, empty on success.
std::string AddRules(scmp_filter_ctx ctx, bool allow_perf_events) {
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc != 0) return ErrText("seccomp_attr_set", rc);
  auto refuse = [&](const char* name) -> std::string {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return "";  // not on this architecture
    int added = seccomp_rule_add(ctx, eperm, nr, 0);
    return added == 0 ? "" : ErrText(name, added);
  };
  for (const char* name : kRefused) {
    if (std::string e = refuse(name); !e.empty()) return e;
  }
  if (!allow_perf_events) {
    if (std::string e = refuse("perf_event_open"); !e.empty()) return e;
  }
  rc = seccomp_rule_add(ctx, eperm, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  if (rc != 0) return ErrText("socket rule", rc);
  for (unsigned long flag : kNamespaceFlags) {
    rc = seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
    if (rc != 0) return ErrText("clone rule", rc);
  }
  rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc != 0) return ErrText("clone3 rule", rc);
  return "";
}

// Exports the program through a memfd into *filter.
std::string Export(scmp_filter_ctx ctx, SeccompFilter* filter) {
  int fd = memfd_create("kforge-seccomp", MFD_CLOEXEC);
  if (fd < 0) return ErrText("memfd_create", errno);
  std::string error;
  struct stat st = {};
  int rc = seccomp_export_bpf(ctx, fd);
  if (rc != 0) {
    error = ErrText("seccomp_export_bpf", rc);
  } else if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size % sizeof(sock_filter) != 0) {
    error = "seccomp_export_bpf wrote no program";
  } else {
    filter->instructions.resize(st.st_size / sizeof(sock_filter));
    if (pread(fd, filter->instructions.data(), st.st_size, 0) != st.st_size) {
      error = ErrText("reading the exported program", errno);
    }
  }
  close(fd);
  return error;
}

SeccompFilter Build(bool allow_perf_events) {
  SeccompFilter filter;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) {
    filter.error = "seccomp_init failed";
    return filter;
  }
  filter.error = AddRules(ctx, allow_perf_events);
  if (filter.error.empty()) filter.error = Export(ctx, &filter);
  seccomp_release(ctx);
  if (!filter.error.empty()) {
    filter.instructions.clear();
    return filter;
  }
  filter.program.len = static_cast<unsigned short>(filter.instructions.size());
  filter.program.filter = filter.instructions.data();
  return filter;
}

}  // namespace

const SeccompFilter& SandboxSeccompFilter(bool allow_perf_events) {
  static const SeccompFilter strict = Build(false);
  static const SeccompFilter profiling = Build(true);
  return allow_perf_events ? profiling : strict;
}

std::string DescribeSeccompFilter() {
  return "socket() except AF_UNIX, ptrace, process_vm_*, io_uring_*, bpf, perf_event_open, "
         "userfaultfd, kexec_*, *_module, reboot, swap, acct, mount/umount/pivot_root/unshare/"
         "setns and the new mount API, clone() with namespace flags, keyrings, *_handle_at, "
         "setting clocks refused (EPERM); clone3 answers ENOSYS; other ABIs (int 0x80) kill";
}

}  // namespace kforge
