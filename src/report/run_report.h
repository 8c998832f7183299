// `kforge report <run>`: one run of the forge loop as a self-contained HTML page: its summary,
// speedup and SOL% over the attempts, a roofline with every attempt, a timeline of the attempts,
// and for each attempt its source, the diff from its parent, the verdict, the analyst's advice
// and the model's prompt and answer (docs/report.md).
//
// Thread-safety: free functions; the store serializes its own calls.
#ifndef KFORGE_REPORT_RUN_REPORT_H_
#define KFORGE_REPORT_RUN_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/status.h"
#include "report/report_assets.h"
#include "store/run_store.h"

namespace kforge {

// Everything the store holds about one run.
struct RunRecord {
  RunRow run;
  RunTotals totals;
  std::vector<AttemptRow> attempts;  // by number
  std::vector<LlmCallRow> calls;     // in the order they were made
  std::vector<RecommendationRow> recommendations;
  std::vector<StageRow> stages;
};

// Reads run `run_id`: NotFound (with the store's hint) when there is none.
Result<RunRecord> LoadRunRecord(RunStore& store, int64_t run_id);

// What the page's charts draw (embedded as JSON): {"kind": "run", "seed_ms", "best_attempt",
// "attempts": [{number, phase, status, ms, speedup (over the seed, 0 when either is untimed),
// sol, flops, bytes}], "roofs": {"theoretical": {gflops, bandwidth_gbs, unit}, "achievable":
// {gflops, bandwidth_gbs}} (from the best attempt's verdict, else the last one with a
// roofline; null without)}.
nlohmann::json RunChartData(const RunRecord& record);

// The whole page. Every string from the record is escaped (html.h).
std::string RenderRunReport(const RunRecord& record, const ReportAssets& assets);

// The attempt a diff is taken against: its parent when it has one, else the attempt before it
// (the tuner records no parent; its configurations follow one another); -1 for the first.
int64_t DiffBase(const AttemptRow& attempt);

}  // namespace kforge

#endif  // KFORGE_REPORT_RUN_REPORT_H_
