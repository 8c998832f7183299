// A ProcessRunner that makes one chosen process fail the way processes fail in production
// (a timeout, a crash, the out-of-memory killer, a failed start, an output flood, a job folder
// filled past its bound), for testing what the judge and the loop conclude from each without
// having to provoke it for real.
//
// It wraps a real runner. Every process runs through the real one except the one chosen: the
// `nth` (1-based) process whose role matches `role`. Roles are read from what the process is:
//   "compile"    a compiler (any process that is not a worker);
//   "candidate"  a worker job running a candidate (kforge-worker entry kf_run or a backend's
//                own entry; the Python worker's mode "candidate");
//   "reference"  a worker job running a problem's reference (kf_reference_*, mode
//                "reference");
//   "baseline"   the Python worker's mode "baseline";
//   "peaks"      kforge-worker measuring the device's peaks; "probe" its device probe;
//   "any"        every process.
// With a filter set, only processes it accepts count (one compile among several). `when`
// says whether the fault comes before the process runs (nothing written: it never got far) or
// after it ran to its end (its folder holds a complete report, but the process did not end
// cleanly: a judge must not trust that report).
//
// Thread-safety: Run may be called from several threads; counting is under a mutex.
#ifndef KFORGE_EVAL_FAULT_RUNNER_H_
#define KFORGE_EVAL_FAULT_RUNNER_H_

#include <functional>
#include <mutex>
#include <string>

#include "base/subprocess.h"

namespace kforge {

enum class Fault { kTimeout, kCrash, kOutOfMemory, kStartFailure, kOutputFlood, kFolderFlood };
enum class FaultWhen { kBeforeRun, kAfterRun };

const char* FaultName(Fault f);

class FaultInjectingRunner : public ProcessRunner {
 public:
  FaultInjectingRunner(ProcessRunner& real, Fault fault, std::string role, int nth = 1,
                       FaultWhen when = FaultWhen::kBeforeRun)
      : real_(real), fault_(fault), role_(std::move(role)), nth_(nth), when_(when) {}

  ProcessResult Run(const ProcessSpec& spec) override;
  void set_filter(std::function<bool(const ProcessSpec&)> f) { filter_ = std::move(f); }

  // How many processes were given the fault (0 or 1), and how many of the role were seen.
  int injected() const;
  int seen() const;

  // The role of a process, as above ("compile" for anything that is not a worker job).
  static std::string RoleOf(const ProcessSpec& spec);

 private:
  ProcessResult Inject(const ProcessSpec& spec, ProcessResult ran) const;

  ProcessRunner& real_;
  const Fault fault_;
  const std::string role_;
  const int nth_;
  const FaultWhen when_;
  std::function<bool(const ProcessSpec&)> filter_;
  mutable std::mutex mu_;
  int seen_ = 0;
  int injected_ = 0;
};

}  // namespace kforge

#endif  // KFORGE_EVAL_FAULT_RUNNER_H_
