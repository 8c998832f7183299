// Evaluating a candidate: the gates of EVALUATION.md, in order, ending in one Verdict.
//
//   static check -> compile -> trials (seeds x magnitudes, plus hidden sizes) -> reference
//   (float64) -> candidate run in the sandboxed worker (poisoned outputs, two poisons) ->
//   compare, input checksums, determinism -> timing (fresh inputs, cache flush, device timers)
//   -> re-verify the last timed output -> precision -> speed of light -> baselines.
//
// Thread-safety: Evaluate may run concurrently for different devices; timing on one device
// is serialised by a lock file.
#ifndef KFORGE_EVAL_H_
#define KFORGE_EVAL_H_

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kforge/problem.h"
#include "kforge/status.h"
#include "kforge/verdict.h"

namespace kforge {

class ProcessRunner;

struct EvalOptions {
  std::string backend = "cpp";
  int device = 0;
  std::map<std::string, int64_t> sizes;  // overrides of the problem's defaults
  bool quick = false;                    // use the problem's quick sizes
  int seeds = 5;                         // trials at the timed size (at least 5)
  bool hidden_sizes = true;              // two more trials at a variant size
  bool baselines = true;                 // time the reference and the seed in the same run
  bool timing = true;
  double budget_ms = 2000;               // timing budget per implementation
  double cv_target = 0.02;
  // Timing also stops once the median is known within this fraction (half the width of its 95%
  // confidence interval over it, per input set: base/stats.h MedianPrecision).
  double precision_target = 0.03;
  int min_runs = 10;
  int max_runs = 300;
  double timeout_seconds = 120;          // wall clock per worker run
  uint64_t memory_bytes = 8ull << 30;    // address-space limit of the worker
  // A median below slack x the theoretical floor is "suspicious" (the margin covers timer
  // granularity and clocks above the reported maximum); below the achievable floor (SOL above
  // 100%) the cached measured peaks are measured again first, and the higher ones kept.
  double sol_slack = 0.8;
  int timed_checks = 3;                  // timed runs (picked at random) checked against a reference
  // The source pattern check (advice: every gate holds without it; tests prove that).
  bool static_check = true;
  // The precision policy (kforge/precision.h): the tolerance of every comparison and whether
  // the precision gate accepts fast-math. Unset: the problem's declared policy, else strict.
  std::optional<PrecisionPolicy> precision;
  // Advisory reports (docs/profiling.md); they never change the status.
  bool profile = false;                  // Nsight Compute metrics of one call -> verdict.profile
  bool sanitize = false;                 // compute-sanitizer memcheck of one call -> verdict.sanitizer
  bool racecheck = false;                // with sanitize: racecheck too
  // Trusted state computed once per problem (docs/evaluation.md, "Trusted state, computed
  // once"): the check trials' references and the baselines are kept in <cache>/trusted and
  // reused while their key matches; baselines older than baseline_max_age_s, or all of them
  // with rebaseline (--rebaseline), are timed again.
  bool trusted_state = true;
  bool rebaseline = false;
  double baseline_max_age_s = 6 * 3600;
};

// Judges `candidate` (a source file for options.backend) on `problem`. The Verdict carries
// every kernel outcome; a non-OK Status means the evaluation itself could not happen (unknown
// backend, a precision policy the problem does not allow, broken problem reference, no worker
// binary) and says what to do.
Result<Verdict> Evaluate(const Problem& problem, const std::filesystem::path& candidate,
                         const EvalOptions& options, ProcessRunner& runner);

// PyTorch problems only: runs the reference and times the eager and torch.compile baselines
// (baselines "torch_eager", "torch_compile", "torch_best"), judging no candidate. The verdict's
// status is correct when they ran; failures of a baseline are warnings.
Result<Verdict> MeasureBaselines(const Problem& problem, const EvalOptions& options, ProcessRunner& runner);

// --- Confirmed speedups (docs/evaluation.md, "Confirmed speedups") ---------------------------

// A kernel to re-time: a source file for EvalOptions::backend, or, on a PyTorch problem, a
// baseline ("torch_eager" or "torch_compile").
struct ConfirmSubject {
  std::string label;             // how reports name it: "candidate", "seed", "attempt 7", ...
  std::filesystem::path source;  // empty for a baseline
  std::string baseline;          // empty for a source
};

struct ConfirmOptions {
  int rounds = 5;           // rounds of ABBA (each subject timed twice per round)
  // Timing budget of each job (a judgement's: 2000). The worker stops after 3 runs once twice
  // the budget is spent, and the supervisor-clock gate needs runs to tell a loaded machine
  // from a forged timer: at 300 ms a 20 ms matmul got 4 runs and half its jobs were flagged
  // on a loaded machine, at 1000 ms 10 runs and none.
  double budget_ms = 1000;
  int min_runs = 10;        // timed runs per job at least (as in a judgement)
  int timed_checks = 1;     // timed outputs per job checked against the reference (a judgement: 3)
  double confidence = 0.9;  // of the bootstrap interval
  int resamples = 2000;     // bootstrap resamples
  uint64_t seed = 1;        // of the bootstrap: the same times give the same interval
};

// Times one kernel again and again without its check trials. Creating it runs the gates up to
// the reference of two input sets (static check, compile, reference); each Time() is then one
// sandboxed worker job: fresh inputs for every timed run, outputs poisoned, the cache flushed,
// the supervisor's clock, and a random sample of timed outputs checked against the reference,
// exactly as in a judgement. Time() returns a correct verdict with `timing`, or the verdict of
// what failed (a gate at creation, a wrong timed output, a crash); a non-OK Status when the
// timing itself could not happen. Not thread-safe; one timer per thread.
class KernelTimer {
 public:
  virtual ~KernelTimer() = default;
  virtual Result<Verdict> Time() = 0;
};

// `options` as for Evaluate; the timer keeps its own copies of `problem` and `options`.
// REQUIRES: `runner` outlives the timer.
Result<std::unique_ptr<KernelTimer>> NewKernelTimer(const Problem& problem, const ConfirmSubject& subject,
                                                    const EvalOptions& options, ProcessRunner& runner);

// The times of one interleaved confirmation of several kernels.
struct InterleavedTimes {
  std::vector<std::string> labels;           // the subjects, in order
  std::vector<std::vector<double>> job_ms;   // per subject: each job's median, two per round
  int rounds = 0;                            // rounds completed
  int failed = -1;                           // the subject whose timing failed, or -1
  std::optional<Verdict> failure;            // its verdict
  double seconds = 0;                        // wall time, preparation included
  ConfirmOptions options;

  // Subject `a` against subject `b` over the completed rounds.
  Confirmation Compare(size_t a, size_t b) const;
};

using KernelTimerFactory = std::function<Result<std::unique_ptr<KernelTimer>>(const ConfirmSubject&)>;

// Re-times `subjects` interleaved: each round times them in order and then in reverse (for two,
// A B B A), every timing its own job, so that drift of the machine (clocks, other load) hits
// every subject alike. A subject that fails (at preparation or in any job) ends the
// confirmation: `failed` and `failure` say which and how. Budget per job and rounds from
// `confirm`; everything else from `options`. A non-OK Status when a timing could not happen.
// REQUIRES: at least two subjects.
Result<InterleavedTimes> ConfirmInterleaved(const Problem& problem, const std::vector<ConfirmSubject>& subjects,
                                        const EvalOptions& options, const ConfirmOptions& confirm,
                                        ProcessRunner& runner);
// The same with timers from `make` (tests: fake timers).
Result<InterleavedTimes> ConfirmInterleaved(const std::vector<ConfirmSubject>& subjects, const ConfirmOptions& confirm,
                                        const KernelTimerFactory& make);

// A against B, ABBA: ConfirmInterleaved({a, b}).Compare(0, 1).
Result<Confirmation> Confirm(const Problem& problem, const ConfirmSubject& a, const ConfirmSubject& b,
                             const EvalOptions& options, const ConfirmOptions& confirm, ProcessRunner& runner);

// Peaks of a backend's device, both kinds (docs/evaluation.md, section 4):
//  - achievable: measured by kforge's peak kernels once and cached per device fingerprint;
//    they give SOL%, and read low when the machine was busy;
//  - theoretical: upper bounds from what the device is (cores, clocks, units), computed by
//    the worker's probe on every call; they give the speed-of-light floor, the gate.
struct DevicePeaks {
  double bandwidth_gbs = 0;  // achievable
  double fp32_gflops = 0;    // achievable
  // Achievable, where the backend measures it (CUDA's mma.sync loop; 0: not measured): the
  // compute rate of a problem whose precision bf16 tensor cores can deliver.
  double tensor_bf16_gflops = 0;
  bool cached = false;       // the achievable peaks came from the cache
  // Seconds since the cached peaks were last measured again (a SOL above 100%, or `kforge
  // doctor --remeasure-peaks`); -1: never measured again.
  double remeasured_age_s = -1;
  nlohmann::json fingerprint;
  // TheoreticalPeaksToJson (src/backend/theoretical_peaks.h): units, bandwidth_gbs,
  // bandwidth_source, cache_resident_bytes, basis.
  // Null when the device reports none (a Vulkan GPU tells neither its compute units nor its
  // clocks), with the reason here: the speed-of-light gate then has no floor.
  nlohmann::json theoretical;
  std::string theoretical_error;
};
// `remeasure` ignores (and replaces) the cached achievable peaks. Fails when the device
// cannot be probed or measured.
Result<DevicePeaks> GetDevicePeaks(const std::string& backend, int device, ProcessRunner& runner,
                                   bool remeasure = false);

}  // namespace kforge

#endif  // KFORGE_EVAL_H_
