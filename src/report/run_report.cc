#include "report/run_report.h"

#include <fmt/format.h>

#include <map>

#include "report/attempt_html.h"
#include "report/html.h"
#include "report/json_fields.h"

namespace kforge {

using nlohmann::json;
using report::Arr;
using report::Num;
using report::Obj;
using report::ParseStored;
using report::Str;

Result<RunRecord> LoadRunRecord(RunStore& store, int64_t run_id) {
  RunRecord r;
  KF_ASSIGN_OR_RETURN(r.run, store.GetRun(run_id));
  KF_ASSIGN_OR_RETURN(r.totals, store.Totals(run_id));
  KF_ASSIGN_OR_RETURN(r.attempts, store.Attempts(run_id));
  KF_ASSIGN_OR_RETURN(r.calls, store.LlmCalls(run_id));
  KF_ASSIGN_OR_RETURN(r.recommendations, store.Recommendations(run_id));
  KF_ASSIGN_OR_RETURN(r.stages, store.Stages(run_id));
  return r;
}

int64_t DiffBase(const AttemptRow& attempt) {
  if (attempt.parent > 0) return attempt.parent;
  return attempt.number > 1 ? attempt.number - 1 : -1;
}

namespace {

// The peaks a roofline is drawn under: the best attempt's verdict's, else the last verdict that
// has them (every attempt of a run is judged on one machine).
json Roofs(const RunRecord& r) {
  json roofs = nullptr;
  for (const AttemptRow& a : r.attempts) {
    const json roofline = Obj(ParseStored(a.verdict_json), "roofline");
    const json t = Obj(roofline, "theoretical"), ach = Obj(roofline, "achievable");
    if (Num(t, "gflops") <= 0 && Num(ach, "gflops") <= 0) continue;
    json found = {{"theoretical",
                   {{"gflops", Num(t, "gflops")},
                    {"bandwidth_gbs", Num(t, "bandwidth_gbs")},
                    {"unit", Str(t, "unit")}}},
                  {"achievable",
                   {{"gflops", Num(ach, "gflops")}, {"bandwidth_gbs", Num(ach, "bandwidth_gbs")}}}};
    if (roofs.is_null() || a.number == r.run.best_attempt) roofs = found;
    if (a.number == r.run.best_attempt) break;
  }
  return roofs;
}

}  // namespace

json RunChartData(const RunRecord& r) {
  json attempts = json::array();
  for (const AttemptRow& a : r.attempts) {
    const json roofline = Obj(ParseStored(a.verdict_json), "roofline");
    const bool timed = a.status == "correct" && a.median_ms > 0;
    attempts.push_back({{"number", a.number},
                        {"phase", a.phase},
                        {"status", a.status},
                        {"ms", timed ? a.median_ms : 0.0},
                        {"speedup", timed && r.run.seed_ms > 0 ? r.run.seed_ms / a.median_ms : 0.0},
                        {"sol", timed ? a.sol_percent : 0.0},
                        {"flops", Num(roofline, "flops")},
                        {"bytes", Num(roofline, "bytes")}});
  }
  return {{"kind", "run"},
          {"run", r.run.id},
          {"seed_ms", r.run.seed_ms},
          {"best_attempt", r.run.best_attempt},
          {"attempts", attempts},
          {"roofs", Roofs(r)}};
}

namespace {

std::string Seconds(double s) { return s > 0 ? fmt::format("{:.2f}", s) : "-"; }

std::string Budgets(const json& config) {
  std::string b =
      fmt::format("{} iterations, {} candidates per pass, {} functional attempts, patience {}",
                  static_cast<int64_t>(Num(config, "iterations")),
                  static_cast<int64_t>(Num(config, "candidates")),
                  static_cast<int64_t>(Num(config, "functional_attempts")),
                  static_cast<int64_t>(Num(config, "patience")));
  if (Num(config, "max_evaluations") > 0)
    b +=
        fmt::format(", tuner {} evaluations", static_cast<int64_t>(Num(config, "max_evaluations")));
  b += Num(config, "max_tokens") > 0
           ? fmt::format(", {} tokens", static_cast<int64_t>(Num(config, "max_tokens")))
           : ", no token cap";
  b += Num(config, "max_cost_usd") > 0 ? fmt::format(", ${:.2f}", Num(config, "max_cost_usd"))
                                       : ", no cost cap";
  b += Num(config, "max_seconds") > 0 ? fmt::format(", {:.0f} s", Num(config, "max_seconds"))
                                      : ", no time cap";
  if (Num(config, "sol_target") > 0)
    b += fmt::format(", stop at SOL {:.0f}%", Num(config, "sol_target"));
  return b;
}

std::string SummaryTable(const RunRecord& r) {
  const json config = ParseStored(r.run.config_json);
  const json eval = Obj(config, "eval");
  const RunTotals& t = r.totals;
  std::string precision = Str(eval, "precision");
  std::string h = "<table class=\"kv\">\n";
  h += KeyValueRow(
      "problem",
      r.run.problem + (r.run.problem_path.empty() ? "" : " (" + r.run.problem_path + ")"));
  h += KeyValueRow("backend", r.run.backend);
  h += KeyValueRow("model", r.run.model);
  h += KeyValueRow("precision policy",
                   precision.empty() ? "the problem's (not recorded)" : precision);
  const json sizes = Obj(eval, "sizes");
  h += KeyValueRow("sizes",
                   std::string(report::Bool(eval, "quick", false) ? "quick" : "the problem's") +
                       (sizes.empty() ? "" : ", with " + report::Plain(sizes)));
  h += KeyValueRow("budgets", Budgets(config));
  h += KeyValueRow("status", r.run.status + ": " + r.run.stop_reason);
  h += KeyValueRow("attempts", fmt::format("{} ({} correct)", t.attempts, t.correct));
  h += KeyValueRow("model calls",
                   fmt::format("{} answered, {} failed", t.llm_calls, t.failed_llm_calls));
  h += KeyValueRow("tokens", fmt::format("{} in ({} cached), {} out", t.input_tokens,
                                         t.cached_tokens, t.output_tokens));
  h += KeyValueRow("cost", fmt::format("${:.4f}", t.cost_usd));
  h += KeyValueRow("wall time", fmt::format("{:.1f} s ({:.1f} s of stages, parallel ones added)",
                                            t.wall_seconds, t.stage_seconds));
  h += KeyValueRow("started / last update", r.run.created_at + " / " + r.run.updated_at);
  return h + "</table>\n";
}

const AttemptRow* FindAttempt(const RunRecord& r, int64_t number) {
  for (const AttemptRow& a : r.attempts)
    if (a.number == number) return &a;
  return nullptr;
}

// The best kernel: time, single-run speedup and the confirmed ratio over the seed with its
// interval (the headline a speedup claim rests on).
std::string BestBox(const RunRecord& r) {
  const AttemptRow* best = FindAttempt(r, r.run.best_attempt);
  if (!best) return "<div class=\"best none\"><h3>No correct kernel</h3></div>\n";
  std::string h = "<div class=\"best\"><h3>Best kernel: <a href=\"#attempt-" +
                  std::to_string(best->number) + "\">attempt " + std::to_string(best->number) +
                  "</a></h3>\n<table class=\"kv\">";
  h += KeyValueRow("time",
                   fmt::format("{:.4f} ms (seed {:.4f} ms)", best->median_ms, r.run.seed_ms));
  if (r.run.seed_ms > 0 && best->median_ms > 0)
    h += KeyValueRow("single-run speedup",
                     fmt::format("{:.2f}x over the seed", r.run.seed_ms / best->median_ms));
  h += KeyValueRow("SOL", fmt::format("{:.1f}%", best->sol_percent));
  h += "</table>\n";
  const json confirmed = Arr(ParseStored(best->verdict_json), "confirmed");
  bool any = false;
  for (const json& c : confirmed) {
    const json ci = Arr(c, "ci");
    const double lo = ci.size() == 2 && ci[0].is_number() ? ci[0].get<double>() : 0,
                 hi = ci.size() == 2 && ci[1].is_number() ? ci[1].get<double>() : 0;
    const std::string line = fmt::format("{:.2f}x over {}", Num(c, "ratio"), Str(c, "against"));
    const std::string detail =
        fmt::format("{:.0f}% CI [{:.2f}, {:.2f}], {} rounds, {}", 100 * Num(c, "confidence"), lo,
                    hi, static_cast<int64_t>(Num(c, "rounds")), Str(c, "outcome"));
    h += std::string(any ? "<p class=\"confirmed minor\">" : "<p class=\"confirmed\">") +
         "confirmed <b>" + HtmlEscape(line) + "</b>, " + HtmlEscape(detail) + "</p>\n";
    any = true;
  }
  if (!any)
    h += "<p class=\"note\">Not confirmed (the run had --no-confirm, or stopped before).</p>\n";
  return h + "</div>\n";
}

// Seconds a verdict spent checking and timing, from the worker's phases where it reports them.
struct AttemptTimes {
  double queue = 0, compile = 0, check = 0, time = 0, evaluate = 0, model = 0;
  bool recorded = false;  // from the store's seconds_json (schema 3), not rebuilt from the verdict
  int64_t tokens = 0;
  double cost = 0;
};

std::map<int64_t, AttemptTimes> TimesByAttempt(const RunRecord& r) {
  std::map<int64_t, AttemptTimes> out;
  for (const AttemptRow& a : r.attempts) {
    AttemptTimes& t = out[a.number];
    const json seconds = ParseStored(a.seconds_json);
    if (seconds.is_object() &&
        !seconds.empty()) {  // what the loop measured, as kforge show prints it
      t.recorded = true;
      t.queue = Num(seconds, "queue");
      t.compile = Num(seconds, "compile");
      t.check = Num(seconds, "check");
      t.time = Num(seconds, "time");
      t.evaluate = Num(seconds, "evaluate");
      continue;
    }
    // Attempts recorded before schema 3: the verdict's stages and the worker's phases.
    const json v = ParseStored(a.verdict_json);
    const json stages = Obj(v, "stages_seconds"), phases = Obj(v, "worker_phases_ms");
    t.compile = Num(stages, "compile");
    t.check = Num(stages, "reference") + Num(stages, "compare") + Num(phases, "checks") / 1000;
    t.time = Num(phases, "timing") / 1000;
  }
  for (const StageRow& s : r.stages)
    if (s.attempt > 0 && s.stage.find("evaluate") != std::string::npos && !out[s.attempt].recorded)
      out[s.attempt].evaluate += s.seconds;
  for (const LlmCallRow& c : r.calls) {
    if (c.attempt <= 0) continue;
    AttemptTimes& t = out[c.attempt];
    t.model += c.latency_ms / 1000;
    t.tokens += c.input_tokens + c.output_tokens;
    t.cost += c.cost_usd;
  }
  return out;
}

std::string Timeline(const RunRecord& r) {
  std::string h =
      "<table class=\"grid\" "
      "id=\"timeline\">\n<tr><th>#</th><th>phase</th><th>iter</th><th>parent</th><th>status</th>"
      "<th>median ms</th><th>x seed</th><th>SOL %</th>"
      "<th title=\"from the answer to the start of its judgement\">queue s</th>"
      "<th title=\"the compiler\">compile s</th>"
      "<th title=\"references and checked runs\">check s</th><th title=\"timed runs\">time s</th>"
      "<th title=\"the whole judgement\">evaluate s</th><th title=\"model calls for this "
      "attempt\">model s</th>"
      "<th>tokens</th><th>cost $</th></tr>\n";
  const std::map<int64_t, AttemptTimes> times = TimesByAttempt(r);
  for (const AttemptRow& a : r.attempts) {
    const AttemptTimes& t = times.at(a.number);
    const bool timed = a.status == "correct" && a.median_ms > 0;
    const std::string cls = a.number == r.run.best_attempt ? " class=\"best-row\"" : "";
    h += fmt::format("<tr{}><td><a href=\"#attempt-{}\">{}</a></td><td>", cls, a.number, a.number) +
         HtmlEscape(a.phase) +
         fmt::format("</td><td>{}</td><td>{}</td><td>", a.iteration,
                     a.parent > 0 ? std::to_string(a.parent) : "-") +
         HtmlEscape(a.status.empty() ? a.state : a.status) + "</td>";
    h += fmt::format(
        "<td>{}</td><td>{}</td><td>{}</td>", timed ? fmt::format("{:.4f}", a.median_ms) : "-",
        timed && r.run.seed_ms > 0 ? fmt::format("{:.2f}", r.run.seed_ms / a.median_ms) : "-",
        timed ? fmt::format("{:.1f}", a.sol_percent) : "-");
    h += fmt::format(
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></"
        "tr>\n",
        Seconds(t.queue), Seconds(t.compile), Seconds(t.check), Seconds(t.time),
        Seconds(t.evaluate), Seconds(t.model), t.tokens > 0 ? std::to_string(t.tokens) : "-",
        t.cost > 0 ? fmt::format("{:.4f}", t.cost) : "-");
  }
  return h + "</table>\n";
}

std::string Attempts(const RunRecord& r) {
  std::string h;
  for (const AttemptRow& a : r.attempts) {
    AttemptContext context;
    context.base = FindAttempt(r, DiffBase(a));
    context.base_is_parent = a.parent > 0;
    context.best = a.number == r.run.best_attempt;
    context.backend = r.run.backend;
    for (const LlmCallRow& c : r.calls)
      if (c.attempt == a.number) context.calls.push_back(&c);
    for (const RecommendationRow& rec : r.recommendations)
      if (rec.attempt == a.number) context.recommendations.push_back(&rec);
    h += AttemptSection(a, context);
  }
  return h;
}

}  // namespace

std::string RenderRunReport(const RunRecord& r, const ReportAssets& assets) {
  HtmlPage page;
  page.title = fmt::format("kforge run {}: {} on {}", r.run.id, r.run.problem, r.run.backend);
  page.body = "<header><h1>" + HtmlEscape(page.title) + "</h1><p class=\"sub\">" +
              HtmlEscape(r.run.model + " · " + r.run.status + " · " + r.run.stop_reason) +
              "</p></header>\n<div class=\"top\">\n" + SummaryTable(r) + BestBox(r) + "</div>\n";
  page.body +=
      "<h2>Speedup and SOL over the attempts</h2>\n<div class=\"charts\">"
      "<div class=\"chart\"><canvas id=\"chart-speedup\"></canvas></div>"
      "<div class=\"chart\"><canvas id=\"chart-roofline\"></canvas></div></div>\n";
  page.body += "<h2>Timeline</h2>\n" + Timeline(r);
  page.body += "<h2>Attempts</h2>\n" + Attempts(r);
  page.body +=
      "<footer>Written by kforge report from the run store. Self-contained: Chart.js and "
      "highlight.js (Debian's "
      "libjs-chart.js and libjs-highlight.js) are inlined.</footer>\n";
  page.data = RunChartData(r);
  page.page_js = kRunReportJs;
  page.libraries = assets.Libraries();
  return RenderPage(page);
}

}  // namespace kforge
