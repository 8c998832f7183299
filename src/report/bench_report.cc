#include "report/bench_report.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

namespace kforge {

using nlohmann::json;

namespace {

const char* const kTorchBaselines[] = {"torch_eager", "torch_compile", "torch_best"};
const char* const kProblemBaselines[] = {"reference", "seed"};

bool AnyRowHas(const std::vector<BenchRow>& rows, const char* baseline) {
  for (const BenchRow& r : rows)
    if (r.baseline_ms.count(baseline)) return true;
  return false;
}

// The table's two time columns and two speedup columns: PyTorch's where the suite has them,
// else the problem's reference and seed.
struct TableBaselines {
  const char* times[2];
  const char* time_titles[2];
  const char* speedups[2];
  const char* speedup_titles[2];
};
constexpr TableBaselines kTorchTable = {{"torch_eager", "torch_compile"}, {"eager_ms", "compile_ms"},
                                        {"torch_eager", "torch_best"}, {"x_eager", "x_best"}};
constexpr TableBaselines kProblemTable = {{"reference", "seed"}, {"ref_ms", "seed_ms"},
                                          {"reference", "seed"}, {"x_ref", "x_seed"}};

const TableBaselines& TableFor(const std::vector<BenchRow>& rows) {
  for (const char* b : kTorchBaselines)
    if (AnyRowHas(rows, b)) return kTorchTable;
  for (const char* b : kProblemBaselines)
    if (AnyRowHas(rows, b)) return kProblemTable;
  return kTorchTable;
}

std::string Ms(double v) { return v > 0 ? fmt::format("{:.4f}", v) : "-"; }
std::string X(double v) { return v > 0 ? fmt::format("{:.2f}x", v) : "-"; }

}  // namespace

double BenchRow::Speedup(const std::string& baseline) const {
  auto it = baseline_ms.find(baseline);
  if (it == baseline_ms.end() || it->second <= 0 || ms <= 0) return 0;
  return it->second / ms;
}

double BenchRow::ConfirmedRatio() const {
  return confirmed.is_object() ? confirmed.value("ratio", 0.0) : 0;
}

namespace {

// "1.84x [1.71, 1.97] seed": the confirmed ratio, its interval and what it was against.
std::string ConfirmedText(const BenchRow& r) {
  if (r.ConfirmedRatio() <= 0) return "-";
  std::vector<double> ci = r.confirmed.value("ci", std::vector<double>{0, 0});
  return fmt::format("{:.2f}x [{:.2f}, {:.2f}] {}", r.ConfirmedRatio(), ci.size() == 2 ? ci[0] : 0.0, ci.size() == 2 ? ci[1] : 0.0,
                     r.confirmed.value("against", ""));
}

}  // namespace

std::vector<std::string> BenchBaselines(const std::vector<BenchRow>& rows) {
  std::vector<std::string> out;
  bool torch = false;
  for (const char* b : kTorchBaselines) torch |= AnyRowHas(rows, b);
  bool problem = false;
  for (const char* b : kProblemBaselines) problem |= AnyRowHas(rows, b);
  if (torch || !problem) out.insert(out.end(), std::begin(kTorchBaselines), std::end(kTorchBaselines));
  if (problem) out.insert(out.end(), std::begin(kProblemBaselines), std::end(kProblemBaselines));
  return out;
}

double FastP(const std::vector<BenchRow>& rows, const std::string& baseline, double p) {
  int fast = 0;
  for (const BenchRow& r : rows)
    if (r.correct() && (p == 0 || r.Speedup(baseline) > p)) ++fast;
  return rows.empty() ? 0 : static_cast<double>(fast) / static_cast<double>(rows.size());
}

BenchSummary Summarize(const std::vector<BenchRow>& rows) {
  BenchSummary s;
  s.baselines = BenchBaselines(rows);
  s.problems = static_cast<int>(rows.size());
  for (const BenchRow& r : rows) s.correct += r.correct();
  s.share_correct = s.problems ? static_cast<double>(s.correct) / s.problems : 0;
  for (const std::string& b : s.baselines) {
    double log_sum = 0;
    int n = 0;
    for (double p : s.ps) s.fast_p[b][p] = FastP(rows, b, p);
    for (const BenchRow& r : rows) {
      double x = r.correct() ? r.Speedup(b) : 0;
      if (x > 0) {
        log_sum += std::log(x);
        ++n;
      }
    }
    s.geomean[b] = n ? std::exp(log_sum / n) : 0;
    s.geomean_count[b] = n;
  }
  double log_sum = 0;
  for (const BenchRow& r : rows) {
    if (!r.correct() || r.ConfirmedRatio() <= 0) continue;
    ++s.confirmed;
    log_sum += std::log(r.ConfirmedRatio());
    std::vector<double> ci = r.confirmed.value("ci", std::vector<double>{});
    s.confirmed_faster += ci.size() == 2 && ci[0] > 1;
  }
  s.confirmed_geomean = s.confirmed ? std::exp(log_sum / s.confirmed) : 0;
  return s;
}

namespace {

json RowToJson(const BenchRow& r) {
  json j = {{"problem", r.problem},
            {"candidate", r.candidate},
            {"status", r.status},
            {"message", r.message},
            {"precision", r.precision},
            {"median_ms", r.ms},
            {"baselines_ms", r.baseline_ms},
            {"published_ms", r.published_ms},
            {"torch_compile_first_call_s", r.compile_first_call_s},
            {"speedups", json::object()}};
  for (const auto& [b, ms] : r.baseline_ms)
    if (r.Speedup(b) > 0) j["speedups"][b] = r.Speedup(b);
  if (!r.confirmed.is_null()) j["confirmed"] = r.confirmed;
  if (!r.verdict.is_null()) j["verdict"] = r.verdict;
  return j;
}

json SummaryToJson(const BenchSummary& s) {
  json sum = {{"problems", s.problems}, {"correct", s.correct}, {"share_correct", s.share_correct},
              {"fast_p", json::object()}, {"geomean_speedup", json::object()}};
  for (const auto& [b, by_p] : s.fast_p) {
    for (const auto& [p, v] : by_p) sum["fast_p"][b][fmt::format("{:g}", p)] = v;
    sum["geomean_speedup"][b] = {{"value", s.geomean.at(b)}, {"problems", s.geomean_count.at(b)}};
  }
  sum["confirmed"] = {{"problems", s.confirmed},
                      {"faster", s.confirmed_faster},
                      {"geomean_ratio", s.confirmed_geomean}};
  return sum;
}

double Get(const std::map<std::string, double>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? 0.0 : it->second;
}

// Row i's baseline times: the first pass that measured them (a pass whose candidate failed
// measured none).
const BenchRow& BaselineRow(const std::vector<BenchPass>& passes, size_t i) {
  for (const BenchPass& p : passes)
    if (!p.rows[i].baseline_ms.empty()) return p.rows[i];
  return passes[0].rows[i];
}

constexpr int kGroupWidth = 14 + 1 + 10 + 1 + 8 + 1 + 8;  // status kernel_ms x_eager x_best

std::string Header(const std::vector<BenchPass>& passes, bool published, const TableBaselines& tb) {
  std::string groups = fmt::format("{:<52} {:>10} {:>10}", "", "", "");
  std::string columns = fmt::format("{:<52} {:>10} {:>10}", "problem", tb.time_titles[0], tb.time_titles[1]);
  if (published) {
    groups += fmt::format(" {:>10} {:>10} {:>7} {:>7}", "", "", "", "");
    columns +=
        fmt::format(" {:>10} {:>10} {:>7} {:>7}", "pub_eager", "pub_comp", "r_eager", "r_comp");
  }
  for (const BenchPass& p : passes) {
    groups += fmt::format(" {:<{}}", "[" + p.precision + "]", kGroupWidth);
    columns += fmt::format(" {:<14} {:>10} {:>8} {:>8}", "status", "kernel_ms", tb.speedup_titles[0],
                           tb.speedup_titles[1]);
  }
  groups.erase(groups.find_last_not_of(' ') + 1);
  return groups + "\n" + columns + "\n";
}

std::string Line(const std::vector<BenchPass>& passes, size_t i, bool published, const TableBaselines& tb) {
  const BenchRow& b = BaselineRow(passes, i);
  double e = Get(b.baseline_ms, tb.times[0]), c = Get(b.baseline_ms, tb.times[1]);
  std::string t = fmt::format("{:<52} {:>10} {:>10}", b.problem.substr(0, 52), Ms(e), Ms(c));
  if (published) {
    double pe = Get(b.published_ms, "published_eager"),
           pc = Get(b.published_ms, "published_compile");
    t += fmt::format(" {:>10} {:>10} {:>7} {:>7}", Ms(pe), Ms(pc),
                     e > 0 && pe > 0 ? fmt::format("{:.2f}", e / pe) : "-",
                     c > 0 && pc > 0 ? fmt::format("{:.2f}", c / pc) : "-");
  }
  for (const BenchPass& p : passes) {
    const BenchRow& r = p.rows[i];
    t += fmt::format(" {:<14} {:>10} {:>8} {:>8}", r.status, Ms(r.ms), X(r.Speedup(tb.speedups[0])),
                     X(r.Speedup(tb.speedups[1])));
  }
  t += "\n";
  for (const BenchPass& p : passes) {
    const BenchRow& r = p.rows[i];
    if (!r.correct() && r.status != "baselines" && !r.message.empty())
      t += "    [" + p.precision + "] " + r.message.substr(0, 200) + "\n";
    if (r.ConfirmedRatio() > 0) t += "    [" + p.precision + "] confirmed " + ConfirmedText(r) + "\n";
  }
  if (b.verdict.is_object())
    for (const json& w : b.verdict.value("warnings", json::array()))
      if (w.is_string() && w.get<std::string>().rfind("degenerate problem", 0) == 0)
        t += "    " + w.get<std::string>() + "\n";
  return t;
}

std::string SummarySection(const BenchPass& p) {
  const BenchSummary& s = p.summary;
  std::string t = fmt::format("\n[{}] {} problems, {} correct ({:.1f}%)\n", p.precision, s.problems,
                              s.correct, 100 * s.share_correct);
  t += fmt::format("{:<15} {:>8} {:>8} {:>8} {:>8} {:>14}\n", "baseline", "fast_0", "fast_1", "fast_1.5", "fast_2", "geomean (n)");
  for (const std::string& b : s.baselines) {
    const auto& f = s.fast_p.at(b);
    t += fmt::format("{:<15} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.3f} {:>9.3f} ({})\n", b, f.at(0), f.at(1), f.at(1.5), f.at(2),
                     s.geomean.at(b), s.geomean_count.at(b));
  }
  if (s.confirmed > 0)
    t += fmt::format("confirmed: {} problems, geomean ratio {:.3f}, {} faster (interval above 1)\n", s.confirmed,
                     s.confirmed_geomean, s.confirmed_faster);
  return t;
}

}  // namespace

json BenchToJson(const std::vector<BenchPass>& passes, const json& meta) {
  json out = {{"meta", meta}, {"rows", json::array()}, {"summary_by_precision", json::object()}};
  for (const BenchPass& p : passes) {
    for (const BenchRow& r : p.rows) out["rows"].push_back(RowToJson(r));
    out["summary_by_precision"][p.precision] = SummaryToJson(p.summary);
  }
  out["summary"] = SummaryToJson(passes.front().summary);
  return out;
}

namespace {

std::map<std::string, double> NumberMap(const json& j) {
  std::map<std::string, double> out;
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items())
    if (v.is_number()) out[k] = v.get<double>();
  return out;
}

BenchRow RowFromJson(const json& j) {
  BenchRow r;
  auto str = [&j](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; };
  auto num = [&j](const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; };
  r.problem = str("problem");
  r.candidate = str("candidate");
  r.status = str("status");
  r.message = str("message");
  r.precision = str("precision");
  r.ms = num("median_ms");
  r.baseline_ms = NumberMap(j.value("baselines_ms", json::object()));
  r.published_ms = NumberMap(j.value("published_ms", json::object()));
  r.compile_first_call_s = num("torch_compile_first_call_s");
  if (j.contains("confirmed")) r.confirmed = j["confirmed"];
  if (j.contains("verdict")) r.verdict = j["verdict"];
  return r;
}

}  // namespace

Result<std::vector<BenchPass>> BenchFromJson(const json& bench) {
  if (!bench.is_object() || !bench.contains("rows") || !bench["rows"].is_array())
    return Status::InvalidArgument("not a kforge bench file: it has no \"rows\" array (write one with kforge bench --json FILE)");
  std::vector<BenchRow> rows;
  for (const json& r : bench["rows"])
    if (r.is_object()) rows.push_back(RowFromJson(r));
  std::vector<std::string> labels;
  const json meta = bench.value("meta", json::object());
  if (meta.is_object() && meta.contains("precision") && meta["precision"].is_array())
    for (const json& p : meta["precision"])
      if (p.is_string()) labels.push_back(p.get<std::string>());
  if (labels.empty() || rows.size() % labels.size() != 0) labels = {labels.empty() ? "problem default" : labels[0]};
  if (labels.size() > 1 && rows.empty()) labels.resize(1);
  const size_t per_pass = rows.size() / labels.size();
  std::vector<BenchPass> passes;
  for (size_t k = 0; k < labels.size(); ++k) {
    std::vector<BenchRow> part(rows.begin() + k * per_pass, rows.begin() + (k + 1) * per_pass);
    BenchSummary summary = Summarize(part);
    passes.push_back({labels[k], std::move(part), summary});
  }
  return passes;
}

std::string BenchTable(const std::vector<BenchPass>& passes) {
  const std::vector<BenchRow>& rows = passes.front().rows;
  bool published = false;
  for (const BenchRow& r : rows) published |= !r.published_ms.empty();
  const TableBaselines& tb = TableFor(rows);
  std::string t = Header(passes, published, tb);
  for (size_t i = 0; i < rows.size(); ++i) t += Line(passes, i, published, tb);
  bool baselines_only = !rows.empty();
  for (const BenchRow& r : rows) baselines_only &= r.status == "baselines";
  if (baselines_only)
    return t + fmt::format("\n{} problems: baselines only, no candidate judged\n", rows.size());
  for (const BenchPass& p : passes) t += SummarySection(p);
  return t;
}

namespace {

std::string Duration(double seconds) {
  if (seconds < 90) return fmt::format("{:.0f} s", seconds);
  if (seconds < 5400) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

}  // namespace

std::string BenchProgress(size_t done, size_t total, double elapsed_s) {
  std::string t = fmt::format("{}/{} done, {} elapsed", done, total, Duration(elapsed_s));
  if (done == 0 || done >= total) return t;
  double left = elapsed_s / static_cast<double>(done) * static_cast<double>(total - done);
  return t + ", about " + Duration(left) + " left";
}

std::map<std::string, double> PublishedTimes(const std::string& dir, const std::string& level, const std::string& file) {
  std::map<std::string, double> out;
  for (const auto& [key, name] : std::map<std::string, std::string>{
           {"published_eager", "baseline_time_torch.json"},
           {"published_compile", "baseline_time_torch_compile_inductor_default.json"}}) {
    std::ifstream in(dir + "/" + name);
    if (!in) continue;
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains(level) || !j[level].contains(file)) continue;
    out[key] = j[level][file].value("mean", 0.0);
  }
  return out;
}

}  // namespace kforge
