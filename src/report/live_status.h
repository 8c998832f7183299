// What `kforge serve`'s live page shows (docs/report.md, "Live page"): the workspace's runs, each
// with its phase, attempt, best so far, tokens, cost and time, and the bench files found, as one
// JSON object the page polls; and the page itself.
//
// Only named fields go out: no run's config, prompt or answer, so nothing the store holds beside
// them (a model string, a path) can carry more than it says. Keys are never in the store.
//
// Thread-safety: free functions; the store serializes its own calls.
#ifndef KFORGE_REPORT_LIVE_STATUS_H_
#define KFORGE_REPORT_LIVE_STATUS_H_

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/run_store.h"

namespace kforge {

// {"runs": [{id, problem, backend, model, status, stop_reason, phase, attempt (the latest's
// number), state, attempts, correct, iteration, iterations, best_attempt, best_ms, seed_ms,
// speedup, sol, tokens, cost_usd, wall_seconds, seconds_left (-1: no time budget), updated_at,
// report}], "benches": [{file, suite, backend, problems, correct, share_correct, wall_seconds,
// report}], "version"}: the `max_runs` newest runs of `store` (null: none yet) and every bench
// file (`kforge bench --json`) directly inside `bench_dirs`. `version` is a hash of the rest:
// equal versions, equal contents.
nlohmann::json WorkspaceStatus(RunStore* store,
                               const std::vector<std::filesystem::path>& bench_dirs,
                               size_t max_runs = 50);

// The bench file `name` (a file name, no folder) in `bench_dirs`, as WorkspaceStatus lists
// them; empty when there is none, so no other path can be asked for.
std::filesystem::path FindBenchFile(const std::vector<std::filesystem::path>& bench_dirs,
                                    const std::string& name);

// The live page: self-contained HTML whose script long-polls /api/status and redraws the
// tables (assets/live.js).
std::string LivePage();

}  // namespace kforge

#endif  // KFORGE_REPORT_LIVE_STATUS_H_
