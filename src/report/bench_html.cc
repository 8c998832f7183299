#include "report/bench_html.h"

#include <fmt/format.h>

#include "report/html.h"
#include "report/json_fields.h"

namespace kforge {

using nlohmann::json;
using report::Arr;
using report::Bool;
using report::Num;
using report::Obj;
using report::Str;

std::vector<double> FastPCurvePs() {
  std::vector<double> ps;
  for (int i = 0; i <= 60; ++i) ps.push_back(i * 0.05);
  return ps;
}

json BenchChartData(const std::vector<BenchPass>& passes) {
  json out = {{"kind", "bench"}, {"passes", json::array()}};
  for (const BenchPass& pass : passes) {
    const BenchSummary& s = pass.summary;
    json p = {{"precision", pass.precision}, {"problems", s.problems},
              {"correct", s.correct},        {"share_correct", s.share_correct},
              {"baselines", s.baselines},    {"fast_p", json::object()},
              {"geomean", s.geomean},        {"geomean_count", s.geomean_count}};
    for (const std::string& b : s.baselines) {
      json curve = json::array();
      for (double x : FastPCurvePs()) curve.push_back({x, FastP(pass.rows, b, x)});
      p["fast_p"][b] = curve;
    }
    out["passes"].push_back(p);
  }
  return out;
}

namespace {

std::string Ms(double v) { return v > 0 ? fmt::format("{:.4f}", v) : "-"; }
std::string X(double v) { return v > 0 ? fmt::format("{:.2f}x", v) : "-"; }

double Get(const std::map<std::string, double>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0.0 : it->second;
}

// Flags a row's numbers need read with: an all-zero reference lets an all-zero kernel pass;
// no_custom_kernel: the candidate's own kernels did not do the work.
std::string Flags(const BenchRow& r) {
  std::string h;
  for (const json& w : Arr(r.verdict, "warnings"))
    if (w.is_string() && w.get<std::string>().rfind("degenerate problem", 0) == 0)
      h += "<span class=\"flag\" title=\"" + HtmlEscape(w.get<std::string>()) +
           "\">degenerate</span>";
  if (r.status == "no_custom_kernel") h += "<span class=\"flag\">no_custom_kernel</span>";
  return h;
}

std::string Confirmed(const BenchRow& r) {
  if (r.ConfirmedRatio() <= 0) return "-";
  const json ci = Arr(r.confirmed, "ci");
  const double lo = ci.size() == 2 && ci[0].is_number() ? ci[0].get<double>() : 0,
               hi = ci.size() == 2 && ci[1].is_number() ? ci[1].get<double>() : 0;
  return HtmlEscape(fmt::format("{:.2f}x [{:.2f}, {:.2f}] {}", r.ConfirmedRatio(), lo, hi,
                                Str(r.confirmed, "against")));
}

std::string StatusCell(const BenchRow& r) {
  const std::string cls = r.correct() ? "ok" : r.status == "baselines" ? "none" : "bad";
  std::string h = "<span class=\"status " + cls + "\"";
  if (!r.message.empty() && !r.correct()) h += " title=\"" + HtmlEscape(r.message) + "\"";
  return h + ">" + HtmlEscape(r.status) + "</span>" + Flags(r);
}

std::string PassTable(const BenchPass& pass) {
  const std::vector<std::string>& baselines = pass.summary.baselines;
  bool published = false;
  for (const BenchRow& r : pass.rows) published |= !r.published_ms.empty();
  std::string h =
      "<table class=\"grid "
      "bench\">\n<tr><th>problem</th><th>status</th><th>precision</th><th>kernel ms</th>";
  for (const std::string& b : baselines) h += "<th>" + HtmlEscape(b) + " ms</th>";
  for (const std::string& b : baselines) h += "<th>x " + HtmlEscape(b) + "</th>";
  h += "<th>SOL %</th><th>confirmed</th>";
  if (published)
    h +=
        "<th title=\"KernelBench's published eager time\">published eager ms</th><th>published "
        "compile ms</th>"
        "<th title=\"kforge's eager time over the published one\">eager / published</th>"
        "<th title=\"kforge's torch.compile time over the published one\">compile / published</th>";
  h += "</tr>\n";
  for (const BenchRow& r : pass.rows) {
    h += "<tr><td>" + HtmlEscape(r.problem) + "</td><td>" + StatusCell(r) + "</td><td>" +
         HtmlEscape(r.precision) + "</td><td>" + Ms(r.ms) + "</td>";
    for (const std::string& b : baselines) h += "<td>" + Ms(Get(r.baseline_ms, b)) + "</td>";
    for (const std::string& b : baselines)
      h += "<td>" + X(r.correct() ? r.Speedup(b) : 0) + "</td>";
    const double sol = Num(Obj(r.verdict, "roofline"), "sol_percent");
    h += "<td>" + (sol > 0 ? fmt::format("{:.1f}", sol) : std::string("-")) + "</td><td>" +
         Confirmed(r) + "</td>";
    if (published) {
      const double pe = Get(r.published_ms, "published_eager"),
                   pc = Get(r.published_ms, "published_compile"),
                   e = Get(r.baseline_ms, "torch_eager"), c = Get(r.baseline_ms, "torch_compile");
      h += "<td>" + Ms(pe) + "</td><td>" + Ms(pc) + "</td><td>" +
           (pe > 0 && e > 0 ? fmt::format("{:.2f}", e / pe) : "-") + "</td><td>" +
           (pc > 0 && c > 0 ? fmt::format("{:.2f}", c / pc) : "-") + "</td>";
    }
    h += "</tr>\n";
  }
  h += "</table>\n";
  // Why each problem that is not correct failed, in full (the table's status has it as a tooltip).
  std::string why;
  for (const BenchRow& r : pass.rows)
    if (!r.correct() && r.status != "baselines" && !r.message.empty())
      why += "<li><b>" + HtmlEscape(r.problem) + "</b> " + HtmlEscape(r.status) + ": " +
             HtmlEscape(r.message) + "</li>\n";
  if (!why.empty()) h += "<ul class=\"small\">" + why + "</ul>\n";
  return h;
}

std::string Tiles(const BenchPass& pass) {
  bool baselines_only = !pass.rows.empty();
  for (const BenchRow& r : pass.rows) baselines_only &= r.status == "baselines";
  if (baselines_only)  // nothing was judged: no share correct or speedup to show
    return "<p class=\"note\">Baselines only: no candidate judged (the table has the times).</p>\n";
  const BenchSummary& s = pass.summary;
  auto tile = [](const std::string& value, const std::string& key) {
    return "<div class=\"tile\"><div class=\"v\">" + HtmlEscape(value) + "</div><div class=\"k\">" +
           HtmlEscape(key) + "</div></div>";
  };
  std::string h = "<div class=\"tiles\">" +
                  tile(fmt::format("{}/{}", s.correct, s.problems), "correct") +
                  tile(fmt::format("{:.0f}%", 100 * s.share_correct), "share correct (fast_0)");
  for (const std::string& b : s.baselines)
    if (s.geomean_count.at(b) > 0)
      h += tile(fmt::format("{:.2f}x", s.geomean.at(b)),
                fmt::format("geomean vs {} (n = {})", b, s.geomean_count.at(b)));
  if (s.confirmed > 0)
    h += tile(fmt::format("{:.2f}x", s.confirmed_geomean),
              fmt::format("confirmed geomean ({} of {} faster)", s.confirmed_faster, s.confirmed));
  return h + "</div>\n";
}

std::string MetaLine(const json& meta) {
  std::string line = fmt::format("suite {}, judged by kforge {}; mode {}", Str(meta, "suite"),
                                 Str(meta, "kforge"), Str(meta, "mode"));
  if (Bool(meta, "quick", false)) line += ", quick sizes";
  if (Num(meta, "wall_seconds") > 0)
    line += fmt::format(", {:.1f} s wall", Num(meta, "wall_seconds"));
  const json confirm = Obj(meta, "confirm");
  line += confirm.empty() ? ", no confirmation"
                          : fmt::format(", confirmed over {} rounds",
                                        static_cast<int64_t>(Num(confirm, "rounds")));
  if (!Str(meta, "published").empty()) line += ", published times from " + Str(meta, "published");
  return line;
}

}  // namespace

Result<std::string> RenderBenchReport(const json& bench, const ReportAssets& assets) {
  KF_ASSIGN_OR_RETURN(std::vector<BenchPass> passes, BenchFromJson(bench));
  const json meta = Obj(bench, "meta");
  HtmlPage page;
  page.title =
      fmt::format("kforge bench: {} on {}",
                  Str(meta, "suite").empty() ? "suite" : Str(meta, "suite"), Str(meta, "backend"));
  page.body = "<header><h1>" + HtmlEscape(page.title) + "</h1><p class=\"sub\">" +
              HtmlEscape(MetaLine(meta)) + "</p></header>\n";
  for (const BenchPass& pass : passes)
    page.body += "<h3>[" + HtmlEscape(pass.precision) + "]</h3>\n" + Tiles(pass);
  page.body +=
      "<h2>fast_p, geometric means, share correct</h2>\n<div class=\"charts\">"
      "<div class=\"chart\"><canvas id=\"chart-fastp\"></canvas></div>"
      "<div class=\"chart\"><canvas id=\"chart-geomean\"></canvas></div>"
      "<div class=\"chart small-chart\"><canvas id=\"chart-correct\"></canvas></div></div>\n";
  for (const BenchPass& pass : passes)
    page.body += "<h2>Problems [" + HtmlEscape(pass.precision) + "]</h2>\n" + PassTable(pass);
  page.body +=
      "<p class=\"note\">Speedup: baseline median over the kernel's median, both timed by kforge "
      "in the same judgement; "
      "fast_p: the share of all problems correct and more than p times faster; geometric means "
      "over the correct problems "
      "that have the baseline (docs/bench.md).</p>\n";
  page.body +=
      "<footer>Written by kforge from a bench file. Self-contained: Chart.js and highlight.js "
      "(Debian's libjs-chart.js "
      "and libjs-highlight.js) are inlined.</footer>\n";
  page.data = BenchChartData(passes);
  page.page_js = kBenchReportJs;
  page.libraries = assets.Libraries(/*with_highlight=*/false);
  return RenderPage(page);
}

}  // namespace kforge
