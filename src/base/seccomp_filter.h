// The sandbox's seccomp filter: system calls that no compiler, kernel or worker needs, refused
// with EPERM. Built with libseccomp in the parent and exported as a classic BPF program, so
// that a forked child can load it with one prctl() and no allocation.
//
// Refused: socket() of every family but AF_UNIX (socketpair stays), ptrace,
// process_vm_readv/writev, io_uring_*, bpf, perf_event_open (unless allowed), kexec_*,
// init/finit/delete_module, mount, umount2, pivot_root, unshare, setns, the new mount API
// (fsopen, fsconfig, fsmount, fspick, move_mount, open_tree, mount_setattr), clone() with a
// namespace flag, keyctl, add_key, request_key, userfaultfd, name_to_handle_at,
// open_by_handle_at, clock_settime, settimeofday, adjtimex, clock_adjtime, reboot, swapon,
// swapoff, acct. clone3() answers ENOSYS (its flags lie in memory a filter cannot read; libc
// then falls back to clone()). A system call of another ABI (int 0x80 on x86-64) kills the
// process. fork, clone and threads stay allowed.
//
// Thread-safety: safe to call from several threads; the programs are built once and never
// change.
#ifndef KFORGE_BASE_SECCOMP_FILTER_H_
#define KFORGE_BASE_SECCOMP_FILTER_H_

#include <linux/filter.h>

#include <string>
#include <vector>

namespace kforge {

struct SeccompFilter {
  std::vector<sock_filter> instructions;
  sock_fprog program{};  // points into `instructions`; valid when error is empty
  std::string error;     // why there is no filter (libseccomp failed); empty on success
};

// The filter, built on first use and kept for the life of the process. `allow_perf_events`
// leaves perf_event_open allowed (profiler jobs).
const SeccompFilter& SandboxSeccompFilter(bool allow_perf_events);

// One line for people: what the filter refuses.
std::string DescribeSeccompFilter();

}  // namespace kforge

#endif  // KFORGE_BASE_SECCOMP_FILTER_H_
