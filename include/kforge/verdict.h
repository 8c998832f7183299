// Verdict: the one answer kforge gives about a candidate (EVALUATION.md section 7).
// JSON schema: docs/verdict-schema.md. Thread-safety: a value.
#ifndef KFORGE_VERDICT_H_
#define KFORGE_VERDICT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

enum class VerdictStatus {
  kCompileError,
  kRuntimeError,  // signal, exit code, device error, error returned by the candidate
  kTimeout,
  kWrongOutput,
  kSuspicious,    // a gate found cheating or something physically impossible
  // Correct outputs, but none of the candidate's own kernels did the work (library kernels or
  // the host did; docs/evaluation.md, "Kernels accounted for"): no speedup claim, no fast_p.
  kNoCustomKernel,
  kCorrect,
};

const char* VerdictStatusName(VerdictStatus s);  // "compile_error", ...

struct TimingStats {
  int runs = 0;
  double median_ms = 0, min_ms = 0, mean_ms = 0, stdev_ms = 0, cv = 0;
  double median_precision = 1;  // half the 95% interval of the median over it (base/stats.h)
  double host_median_ms = 0;  // host wall clock, the cross-check
  // The worker's supervisor clocks every timed run from outside the candidate's process
  // (docs/worker-protocol.md): the median of those wall times, and what its null runs took.
  double wall_median_ms = 0, overhead_ms = 0;
  double device_median_ms = 0;    // the device timer's median, as the candidate's process reported it
  bool wall_bounded = false;      // median_ms is the supervisor's bound, above the reported device time
};

// Computes the statistics of device samples (and the host median). `sets[i]` is the input set
// of run i when runs alternate between sets: median_ms is then the mean of the sets' medians and
// cv the root mean square of their coefficients of variation (base/stats.h says why); without
// it the runs are pooled.
TimingStats ComputeStats(const std::vector<double>& device_ms, const std::vector<double>& host_ms,
                         const std::vector<int>& sets = {});

nlohmann::json TimingToJson(const TimingStats& t);
// The inverse of TimingToJson; missing fields stay at their defaults.
TimingStats TimingFromJson(const nlohmann::json& j);

// A speedup confirmed by re-timing two kernels interleaved (docs/evaluation.md, "Confirmed
// speedups"): in each of `rounds` rounds each kernel is timed twice (ABBA), each timing its own
// sandboxed worker job; a round's ratio is median(B's two) / median(A's two), so above 1 means
// A (the candidate) is faster than B (`against`). `ratio` is the median over the rounds and
// [ci_low, ci_high] a percentile-bootstrap interval of that median (`method` says which).
struct Confirmation {
  std::string candidate;                 // A: "candidate", "attempt 7", ...
  std::string against;                   // B: "seed", "attempt 3", "torch_eager", ...
  int rounds = 0;                        // rounds completed
  std::vector<double> ratios;            // per round
  std::vector<double> candidate_ms, against_ms;  // per round: the median of each side's two jobs
  double ratio = 0;                      // median of `ratios`
  double ci_low = 0, ci_high = 0;
  double confidence = 0.9;
  std::string method;
  double seconds = 0;                    // wall time of the confirmation that measured it
  // A kernel whose confirmation timing failed (a timed output wrong, a crash): its label, and
  // that job's verdict as JSON. Then the ratio and interval cover only the rounds before it.
  std::string failed;
  nlohmann::json failure;

  bool ok() const { return failed.empty() && rounds > 0; }
  // "faster" when the interval lies above 1, "slower" when below, else "tied".
  std::string Outcome() const;
  // One line: "2.31x over seed, 90% CI [2.10, 2.52], 5 rounds (faster)".
  std::string Summary() const;
  nlohmann::json ToJson() const;
  static Confirmation FromJson(const nlohmann::json& j);  // missing fields stay at their defaults
};

struct Verdict {
  VerdictStatus status = VerdictStatus::kRuntimeError;
  std::string message;             // one line: why this status
  std::string gate;                // suspicious: which gate fired
  std::string problem, backend, candidate, candidate_hash;
  std::map<std::string, int64_t> sizes;
  std::string compiler_output;     // trimmed to what matters
  std::vector<std::string> warnings;
  nlohmann::json trials = nlohmann::json::array();  // per trial: sizes, seed, magnitude, per-output comparison
  std::optional<TimingStats> timing;
  double flops = 0, bytes = 0;     // the problem's cost at the timed size
  // Speed of light (docs/evaluation.md, section 4) for this size:
  double floor_ms = 0;             // from the theoretical peaks: faster is impossible (the gate)
  double achievable_floor_ms = 0;  // from the peaks measured on this device
  double sol_percent = 0;          // 100 x achievable_floor_ms / median
  // How both floors were derived: `theoretical` (TheoreticalFloor::ToJson) and `achievable`
  // (bound, gflops, bandwidth_gbs, remeasured); empty when no floor was computed.
  nlohmann::json roofline = nlohmann::json::object();
  std::map<std::string, TimingStats> baselines;  // "reference", "seed"
  std::map<std::string, double> speedups;        // baseline time / candidate time
  nlohmann::json precision = nlohmann::json::object();
  nlohmann::json limits = nlohmann::json::object();
  nlohmann::json fingerprint = nlohmann::json::object();
  nlohmann::json stages = nlohmann::json::object();  // seconds spent per stage
  // Where the candidate's worker job spent its "run" stage, by phase (the supervisor's clock,
  // milliseconds): start, open, upload, calibration, load, checks, warmup, timing (with its
  // timing_prepare, timing_collect and timing_verify parts), precision, finish.
  nlohmann::json worker_phases = nlohmann::json::object();
  nlohmann::json resources = nlohmann::json::object();  // per-kernel registers, spills, smem (cuda)
  nlohmann::json profile = nlohmann::json::object();    // --profile: ncu metrics (advisory)
  nlohmann::json sanitizer = nlohmann::json::object();  // --sanitize: compute-sanitizer (advisory)
  // GPU backends: the kernels one checking call ran, own and library (docs/verdict-schema.md);
  // empty where no record is made (CPU backends).
  nlohmann::json kernels = nlohmann::json::object();
  std::vector<Confirmation> confirmed;  // re-timings against baselines or rivals (ConfirmInterleaved)

  bool correct() const { return status == VerdictStatus::kCorrect; }
  nlohmann::json ToJson() const;
  // A readable multi-line summary for terminals.
  std::string Summary() const;
};

// The policy and tolerance rule of a verdict's `precision` object, one line per output:
// "<indent>precision tf32  y: |out - ref| <= ..."; the policy alone when no output was compared
// (a compile error); "" when the verdict has no policy (recorded before policies existed).
std::string DescribePrecision(const nlohmann::json& precision, const std::string& indent);

}  // namespace kforge

#endif  // KFORGE_VERDICT_H_
