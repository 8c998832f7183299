#include "report/live_status.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/files.h"
#include "report/bench_report.h"
#include "report/html.h"
#include "report/json_fields.h"
#include "report/report_assets.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;
using report::Num;
using report::Obj;
using report::ParseStored;
using report::Str;

namespace {

json RunStatus(RunStore& store, const RunRow& run) {
  Result<RunTotals> totals = store.Totals(run.id);
  Result<std::vector<AttemptRow>> attempts = store.Attempts(run.id);
  const RunTotals t = totals.ok() ? *totals : RunTotals{};
  const json config = ParseStored(run.config_json);
  json j = {{"id", run.id},
            {"problem", run.problem},
            {"backend", run.backend},
            {"model", run.model},
            {"status", run.status},
            {"stop_reason", run.stop_reason},
            {"attempts", t.attempts},
            {"correct", t.correct},
            {"best_attempt", run.best_attempt},
            {"best_ms", run.best_ms},
            {"seed_ms", run.seed_ms},
            {"speedup", run.best_ms > 0 && run.seed_ms > 0 ? run.seed_ms / run.best_ms : 0.0},
            {"sol", 0.0},
            {"tokens", t.input_tokens + t.output_tokens},
            {"cost_usd", t.cost_usd},
            {"wall_seconds", t.wall_seconds},
            {"updated_at", run.updated_at},
            {"iterations", static_cast<int64_t>(Num(config, "iterations"))},
            {"phase", ""},
            {"state", ""},
            {"attempt", 0},
            {"iteration", 0},
            {"report", fmt::format("/run/{}", run.id)}};
  const double budget = Num(config, "max_seconds");
  j["seconds_left"] = budget > 0 ? std::max(0.0, budget - t.wall_seconds) : -1.0;
  if (attempts.ok() && !attempts->empty()) {
    const AttemptRow& last = attempts->back();
    j["phase"] = last.phase;
    j["state"] = last.state;
    j["attempt"] = last.number;
    j["iteration"] = last.iteration;
    // The tuner counts evaluations, not passes.
    if (last.phase == "tune")
      j["iterations"] = static_cast<int64_t>(Num(config, "max_evaluations"));
    // The run records its best once it is confirmed; until then the fastest correct single run
    // is the best so far.
    const AttemptRow* best = nullptr;
    for (const AttemptRow& a : *attempts) {
      if (a.number == run.best_attempt) {
        best = &a;
        break;
      }
      if (run.best_attempt < 0 && a.status == "correct" && a.median_ms > 0 &&
          (!best || a.median_ms < best->median_ms))
        best = &a;
    }
    if (best) {
      j["best_ms"] = best->median_ms;
      j["speedup"] = run.seed_ms > 0 ? run.seed_ms / best->median_ms : 0.0;
      j["sol"] = best->sol_percent;
    }
  }
  return j;
}

// A bench file's headline, or null when `file` is not one (any other JSON file is skipped).
json BenchStatus(const fs::path& file) {
  std::error_code ec;
  if (fs::file_size(file, ec) > (64u << 20) || ec) return nullptr;
  Result<std::string> text = ReadFile(file);
  if (!text.ok()) return nullptr;
  const json bench = json::parse(*text, nullptr, false);
  if (!bench.is_object() || !bench.contains("rows") || !bench.contains("meta")) return nullptr;
  Result<std::vector<BenchPass>> passes = BenchFromJson(bench);  // the summary, recomputed
  if (!passes.ok() || passes->empty()) return nullptr;
  const BenchSummary& summary = passes->front().summary;
  const json meta = Obj(bench, "meta");
  return {{"file", file.filename().string()},
          {"suite", Str(meta, "suite")},
          {"backend", Str(meta, "backend")},
          {"problems", summary.problems},
          {"correct", summary.correct},
          {"share_correct", summary.share_correct},
          {"wall_seconds", Num(meta, "wall_seconds")},
          {"report", "/bench/" + file.filename().string()}};
}

std::vector<fs::path> JsonFiles(const std::vector<fs::path>& dirs) {
  std::vector<fs::path> files;
  for (const fs::path& dir : dirs) {
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

json WorkspaceStatus(RunStore* store, const std::vector<fs::path>& bench_dirs, size_t max_runs) {
  json status = {{"runs", json::array()}, {"benches", json::array()}};
  if (store) {
    Result<std::vector<RunRow>> runs = store->ListRuns();  // newest first
    for (size_t i = 0; runs.ok() && i < runs->size() && i < max_runs; ++i)
      status["runs"].push_back(RunStatus(*store, (*runs)[i]));
  }
  for (const fs::path& file : JsonFiles(bench_dirs))
    if (json b = BenchStatus(file); !b.is_null()) status["benches"].push_back(b);
  status["version"] = HashHex(status.dump(-1, ' ', false, json::error_handler_t::replace));
  return status;
}

fs::path FindBenchFile(const std::vector<fs::path>& bench_dirs, const std::string& name) {
  for (const fs::path& file : JsonFiles(bench_dirs))
    if (file.filename() == name && !BenchStatus(file).is_null()) return file;
  return {};
}

std::string LivePage() {
  HtmlPage page;
  page.title = "kforge: live";
  page.body =
      "<header><h1>kforge: runs and benches of this workspace</h1><p class=\"sub\" "
      "id=\"live-state\">connecting...</p></header>\n<h2>Runs</h2>\n<table class=\"grid\" "
      "id=\"runs\"><thead><tr><th>run</th><th>problem</th><th>backend</th><th>model</th>"
      "<th>status</th><th>phase</th><th>attempt</th><th>correct</th><th>best ms</th>"
      "<th>x seed</th><th>SOL %</th><th>tokens</th><th>cost $</th><th>time s</th>"
      "<th>time left</th><th>report</th></tr></thead><tbody></tbody></table>\n"
      "<h2>Benches</h2>\n<table class=\"grid\" id=\"benches\"><thead><tr><th>file</th>"
      "<th>suite</th><th>backend</th><th>problems</th><th>correct</th><th>share correct</th>"
      "<th>wall s</th><th>report</th></tr></thead><tbody></tbody></table>\n<footer>Read-only. "
      "Reports open at /run/&lt;id&gt; and /bench/&lt;file&gt;.</footer>\n";
  page.data = json::object();
  page.page_js = kLiveJs;
  // The page talks only to the server it came from.
  page.csp =
      "default-src 'none'; connect-src 'self'; script-src 'unsafe-inline'; style-src "
      "'unsafe-inline'";
  return RenderPage(page);
}

}  // namespace kforge
