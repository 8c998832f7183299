// `kforge bench ... --html [FILE]` and `kforge report <bench.json>`: a bench as a
// self-contained HTML page: per precision pass, a table of the problems (status, times,
// speedups against each baseline, SOL%, flags, confirmed ratio, KernelBench's published times
// where the bench has them), the fast_p curve for p from 0 to 3, geometric-mean bars per
// baseline and the share correct (docs/report.md; the figures are bench_report.h's).
//
// Thread-safety: free functions without shared state.
#ifndef KFORGE_REPORT_BENCH_HTML_H_
#define KFORGE_REPORT_BENCH_HTML_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/status.h"
#include "report/bench_report.h"
#include "report/report_assets.h"

namespace kforge {

// The p values of the fast_p curve: 0 to 3 in steps of 0.05.
std::vector<double> FastPCurvePs();

// What the charts draw: {"kind": "bench", "passes": [{precision, problems, correct,
// share_correct, baselines: [...], fast_p: {baseline: [[p, share], ...]}, geomean: {baseline:
// value}, geomean_count: {baseline: n}}]}.
nlohmann::json BenchChartData(const std::vector<BenchPass>& passes);

// The page for a bench file (BenchToJson's JSON: meta, rows, summaries). InvalidArgument when
// `bench` is not one. Every string from it is escaped (html.h).
Result<std::string> RenderBenchReport(const nlohmann::json& bench, const ReportAssets& assets);

}  // namespace kforge

#endif  // KFORGE_REPORT_BENCH_HTML_H_
