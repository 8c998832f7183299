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
  kCorrect,
};

const char* VerdictStatusName(VerdictStatus s);  // "compile_error", ...

struct TimingStats {
  int runs = 0;
  double median_ms = 0, min_ms = 0, mean_ms = 0, stdev_ms = 0, cv = 0;
  double host_median_ms = 0;  // host wall clock, the cross-check
};

// Computes the statistics of device samples (and the host median).
TimingStats ComputeStats(const std::vector<double>& device_ms, const std::vector<double>& host_ms);
nlohmann::json TimingToJson(const TimingStats& t);

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
  double floor_ms = 0;             // speed-of-light time for this size
  double sol_percent = 0;          // floor / median
  std::map<std::string, TimingStats> baselines;  // "reference", "seed"
  std::map<std::string, double> speedups;        // baseline time / candidate time
  nlohmann::json precision = nlohmann::json::object();
  nlohmann::json limits = nlohmann::json::object();
  nlohmann::json fingerprint = nlohmann::json::object();
  nlohmann::json stages = nlohmann::json::object();  // seconds spent per stage
  nlohmann::json resources = nlohmann::json::object();  // per-kernel registers, spills, smem (cuda)
  nlohmann::json profile = nlohmann::json::object();    // --profile: ncu metrics (advisory)
  nlohmann::json sanitizer = nlohmann::json::object();  // --sanitize: compute-sanitizer (advisory)

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
