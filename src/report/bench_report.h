// `kforge bench` results: per-problem rows and the suite summary the field reports
// (KernelBench's fast_p and geometric-mean speedups), as a table and as JSON.
//
// Definitions (docs/bench.md): a problem's speedup against a baseline is baseline median /
// candidate median, both measured by kforge in the same run. fast_p is the share of *all*
// problems in the suite that are correct and faster than the baseline by more than p
// (fast_0 is the share correct). The geometric mean runs over correct problems that have that
// baseline. Baselines: on PyTorch problems torch_eager, torch_compile and torch_best (the faster
// of the two per problem); on kforge problems (a C++ reference, no PyTorch module) the problem's
// reference and its seed kernel for the backend. A suite reports the baselines its rows have
// (BenchBaselines).
//
// A bench may run the suite under several precision policies (docs/evaluation.md); each is one
// BenchPass with its own rows and summary, reported as its own columns and summary section.
// Beside the single-run figures, each row's confirmed ratio (re-timed interleaved against
// torch_best or the seed) with its interval.
#ifndef KFORGE_REPORT_BENCH_REPORT_H_
#define KFORGE_REPORT_BENCH_REPORT_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/status.h"

namespace kforge {

struct BenchRow {
  std::string problem;
  std::string candidate;   // file judged; empty when none was found or only baselines ran
  std::string status;      // a verdict status, "missing" (no candidate), "error" (kforge could not judge), "baselines"
  std::string message;
  double ms = 0;                            // candidate median, when timed
  std::map<std::string, double> baseline_ms;   // torch_eager, torch_compile, torch_best, reference, seed
  std::map<std::string, double> published_ms;  // published_eager, published_compile (--published)
  double compile_first_call_s = 0;          // torch.compile's first call (compilation), seconds
  std::string precision;                    // the policy it was judged under; "" when nothing was
  nlohmann::json verdict;                   // the whole verdict, when there is one
  // The confirmation against the baseline (a Confirmation's JSON: against, ratio, ci, rounds, ...),
  // null when none ran.
  nlohmann::json confirmed;
  double ConfirmedRatio() const;            // 0 without a confirmation
  bool correct() const { return status == "correct"; }
  // baseline / candidate, 0 when either is missing.
  double Speedup(const std::string& baseline) const;
};

// The baselines a suite's rows were measured against, in report order: torch_eager,
// torch_compile, torch_best when any row has a PyTorch baseline, then reference and seed when
// any row has those. A suite with none reports the PyTorch three (as zeros).
std::vector<std::string> BenchBaselines(const std::vector<BenchRow>& rows);

struct BenchSummary {
  std::vector<std::string> baselines;  // BenchBaselines(rows)
  int problems = 0, correct = 0;
  double share_correct = 0;
  std::vector<double> ps = {0, 1, 1.5, 2};
  std::map<std::string, std::map<double, double>> fast_p;  // baseline -> p -> share
  std::map<std::string, double> geomean;                   // baseline -> geometric mean speedup
  std::map<std::string, int> geomean_count;                // problems in each geometric mean
  // Correct problems with a confirmation: how many, the geometric mean of their confirmed
  // ratios, and how many were confirmed faster (the interval above 1).
  int confirmed = 0, confirmed_faster = 0;
  double confirmed_geomean = 0;
};

// The suite judged under one precision policy.
struct BenchPass {
  std::string precision;       // the policy's name: the label of its columns and its summary
  std::vector<BenchRow> rows;  // one per problem, in suite order
  BenchSummary summary;        // Summarize(rows)
};

BenchSummary Summarize(const std::vector<BenchRow>& rows);

// fast_p: the share of all `rows` that are correct and more than p times faster than `baseline`
// (p = 0: the share correct, whatever the baseline). 0 for no rows.
double FastP(const std::vector<BenchRow>& rows, const std::string& baseline, double p);

// REQUIRES for both: at least one pass; every pass holds the same problems in the same order.
// JSON: "rows" holds every pass's rows (each with its "precision"), "summary" the first pass's
// summary and "summary_by_precision" each pass's, by policy name.
nlohmann::json BenchToJson(const std::vector<BenchPass>& passes, const nlohmann::json& meta);
// A bench JSON (BenchToJson's) read back: its passes in order, each with its rows and a summary
// recomputed from them. Rows split into passes by meta.precision (rows are written pass by
// pass); a file whose rows do not divide evenly is read as one pass. InvalidArgument when it
// has no "rows" array.
Result<std::vector<BenchPass>> BenchFromJson(const nlohmann::json& bench);

// One line per problem: its baseline times (from the first pass that has them), then per pass
// a group of columns (status, kernel_ms and two speedups: x_eager and x_best on a PyTorch
// suite, x_ref and x_seed on a suite of kforge problems) under the pass's policy name; then a
// summary section per pass.
std::string BenchTable(const std::vector<BenchPass>& passes);

// Progress of a bench for its log lines: "3/8 done, 41 s elapsed, about 68 s left" (the time left
// is the mean time per finished job times the jobs left; nothing is guessed before the first
// finishes: "0/8 done, 2 s elapsed").
std::string BenchProgress(size_t done, size_t total, double elapsed_s);

// Published KernelBench baseline times (baseline_time_torch.json and
// baseline_time_torch_compile_inductor_default.json in `dir`): level ("level2") and file name
// -> mean ms, as published_eager / published_compile. Missing files give an empty map.
std::map<std::string, double> PublishedTimes(const std::string& dir, const std::string& level,
                                             const std::string& file);

}  // namespace kforge

#endif  // KFORGE_REPORT_BENCH_REPORT_H_
