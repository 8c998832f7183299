#include "kforge/verdict.h"

#include "base/stats.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kforge {

const char* VerdictStatusName(VerdictStatus s) {
  switch (s) {
    case VerdictStatus::kCompileError: return "compile_error";
    case VerdictStatus::kRuntimeError: return "runtime_error";
    case VerdictStatus::kTimeout: return "timeout";
    case VerdictStatus::kWrongOutput: return "wrong_output";
    case VerdictStatus::kSuspicious: return "suspicious";
    case VerdictStatus::kNoCustomKernel: return "no_custom_kernel";
    case VerdictStatus::kCorrect: return "correct";
  }
  return "unknown";
}

TimingStats ComputeStats(const std::vector<double>& device_ms, const std::vector<double>& host_ms,
                         const std::vector<int>& sets) {
  TimingStats t;
  t.runs = static_cast<int>(device_ms.size());
  if (device_ms.empty()) return t;
  t.median_ms = SetMedian(device_ms, sets);
  t.min_ms = *std::min_element(device_ms.begin(), device_ms.end());
  for (double x : device_ms) t.mean_ms += x;
  t.mean_ms /= static_cast<double>(device_ms.size());
  t.cv = device_ms.size() > 1 ? SetCoefficientOfVariation(device_ms, sets) : 0;
  t.stdev_ms = t.cv * t.median_ms;  // the spread within a set, in ms at the combined median
  t.median_precision = SetMedianPrecision(device_ms, sets);
  t.host_median_ms = SetMedian(host_ms, sets);  // pooled when the lengths differ
  return t;
}

nlohmann::json TimingToJson(const TimingStats& t) {
  nlohmann::json j = {{"runs", t.runs}, {"median_ms", t.median_ms}, {"min_ms", t.min_ms},
                      {"mean_ms", t.mean_ms}, {"stdev_ms", t.stdev_ms}, {"cv", t.cv},
                      {"median_precision", t.median_precision}, {"host_median_ms", t.host_median_ms}};
  if (t.wall_median_ms > 0) {
    j["wall_median_ms"] = t.wall_median_ms;
    j["overhead_ms"] = t.overhead_ms;
    j["device_median_ms"] = t.device_median_ms;
    j["wall_bounded"] = t.wall_bounded;
  }
  return j;
}

TimingStats TimingFromJson(const nlohmann::json& j) {
  TimingStats t;
  t.runs = j.value("runs", 0);
  t.median_ms = j.value("median_ms", 0.0);
  t.min_ms = j.value("min_ms", 0.0);
  t.mean_ms = j.value("mean_ms", 0.0);
  t.stdev_ms = j.value("stdev_ms", 0.0);
  t.cv = j.value("cv", 0.0);
  t.median_precision = j.value("median_precision", 1.0);
  t.host_median_ms = j.value("host_median_ms", 0.0);
  t.wall_median_ms = j.value("wall_median_ms", 0.0);
  t.overhead_ms = j.value("overhead_ms", 0.0);
  t.device_median_ms = j.value("device_median_ms", 0.0);
  t.wall_bounded = j.value("wall_bounded", false);
  return t;
}

namespace {

// ", compute: amx_int8 x3" or ", memory: load/store ports ..." for the summary line.
std::string FloorBasis(const nlohmann::json& t) {
  if (t.empty()) return "";
  if (t.value("bound", "") == "compute")
    return fmt::format(", compute: {} x{}", t.value("unit", ""), t.value("products", 1));
  std::string source = t.value("bandwidth_source", "");
  return ", memory: " + source.substr(0, source.find(':'));
}

}  // namespace

std::string Confirmation::Outcome() const {
  if (rounds == 0) return "unmeasured";
  return ci_low > 1 ? "faster" : ci_high < 1 ? "slower" : "tied";
}

std::string Confirmation::Summary() const {
  if (rounds == 0) return fmt::format("against {}: not measured ({} failed)", against, failed.empty() ? "nothing" : failed);
  std::string s = fmt::format("{:.2f}x over {}, {:.0f}% CI [{:.2f}, {:.2f}], {} rounds ({})", ratio, against,
                              100 * confidence, ci_low, ci_high, rounds, Outcome());
  if (!failed.empty()) s += "; then " + failed + " failed: " + failure.value("message", std::string());
  return s;
}

nlohmann::json Confirmation::ToJson() const {
  nlohmann::json j = {{"candidate", candidate}, {"against", against}, {"rounds", rounds}, {"ratio", ratio},
                      {"ci", {ci_low, ci_high}}, {"confidence", confidence}, {"ratios", ratios},
                      {"candidate_ms", candidate_ms}, {"against_ms", against_ms}, {"method", method},
                      {"seconds", seconds}, {"outcome", Outcome()}};
  if (!failed.empty()) {
    j["failed"] = failed;
    j["failure"] = failure;
  }
  return j;
}

Confirmation Confirmation::FromJson(const nlohmann::json& j) {
  Confirmation c;
  if (!j.is_object()) return c;
  c.candidate = j.value("candidate", "");
  c.against = j.value("against", "");
  c.rounds = j.value("rounds", 0);
  c.ratio = j.value("ratio", 0.0);
  std::vector<double> ci = j.value("ci", std::vector<double>{});
  if (ci.size() == 2) {
    c.ci_low = ci[0];
    c.ci_high = ci[1];
  }
  c.confidence = j.value("confidence", c.confidence);
  c.ratios = j.value("ratios", std::vector<double>{});
  c.candidate_ms = j.value("candidate_ms", std::vector<double>{});
  c.against_ms = j.value("against_ms", std::vector<double>{});
  c.method = j.value("method", "");
  c.seconds = j.value("seconds", 0.0);
  c.failed = j.value("failed", "");
  c.failure = j.value("failure", nlohmann::json());
  return c;
}

nlohmann::json Verdict::ToJson() const {
  nlohmann::json j = {{"schema", "kforge.verdict/1"},
                      {"status", VerdictStatusName(status)},
                      {"message", message},
                      {"problem", problem},
                      {"backend", backend},
                      {"candidate", candidate},
                      {"candidate_hash", candidate_hash},
                      {"sizes", sizes},
                      {"compiler_output", compiler_output},
                      {"warnings", warnings},
                      {"trials", trials},
                      {"precision", precision},
                      {"limits", limits},
                      {"fingerprint", fingerprint},
                      {"stages_seconds", stages}};
  if (!gate.empty()) j["gate"] = gate;
  if (!worker_phases.empty()) j["worker_phases_ms"] = worker_phases;
  if (!resources.empty()) j["resources"] = resources;
  if (!profile.empty()) j["profile"] = profile;
  if (!sanitizer.empty()) j["sanitizer"] = sanitizer;
  if (!kernels.empty()) j["kernels"] = kernels;
  if (timing) {
    j["timing"] = TimingToJson(*timing);
    nlohmann::json r = roofline;
    r.update({{"floor_ms", floor_ms}, {"achievable_floor_ms", achievable_floor_ms}, {"sol_percent", sol_percent},
              {"flops", flops}, {"bytes", bytes}});
    j["roofline"] = r;
  }
  nlohmann::json b = nlohmann::json::object();
  for (const auto& [name, t] : baselines) b[name] = TimingToJson(t);
  j["baselines"] = b;
  j["speedups"] = speedups;
  if (!confirmed.empty()) {
    j["confirmed"] = nlohmann::json::array();
    for (const Confirmation& c : confirmed) j["confirmed"].push_back(c.ToJson());
  }
  return j;
}

std::string DescribePrecision(const nlohmann::json& precision, const std::string& indent) {
  if (!precision.is_object() || !precision.contains("policy")) return "";
  const std::string policy = precision["policy"].get<std::string>();
  const nlohmann::json tolerance = precision.value("tolerance", nlohmann::json::object());
  if (tolerance.empty()) return indent + "precision " + policy + "\n";
  std::string s;
  for (const auto& [name, t] : tolerance.items())
    s += fmt::format("{}precision {}  {}: {}\n", indent, policy, name,
                     t.value("rule", std::string()));
  return s;
}

std::string Verdict::Summary() const {
  std::string s = fmt::format("{}  {} [{}] {}\n", VerdictStatusName(status), problem, backend, candidate);
  if (!message.empty()) s += "  " + message + "\n";
  if (timing) {
    s += fmt::format("  time     median {:.4f} ms  min {:.4f}  cv {:.1f}%  ({} runs; host median {:.4f} ms)\n",
                     timing->median_ms, timing->min_ms, 100 * timing->cv, timing->runs, timing->host_median_ms);
    s += fmt::format("  roofline floor {:.4f} ms (theoretical{})  achievable floor {:.4f} ms  SOL {:.1f}%\n", floor_ms,
                     FloorBasis(roofline.value("theoretical", nlohmann::json::object())), achievable_floor_ms, sol_percent);
  }
  s += DescribePrecision(precision, "  ");
  for (const auto& [name, t] : baselines) {
    auto it = speedups.find(name);
    s += fmt::format("  vs {:<9} {:.4f} ms  speedup {:.2f}x\n", name, t.median_ms,
                     it == speedups.end() ? 0.0 : it->second);
  }
  for (const Confirmation& c : confirmed) s += "  confirmed " + c.Summary() + "\n";
  if (kernels.value("available", false))
    s += fmt::format("  kernels  own {:.4f} ms in {} launch(es), library {:.4f} ms in {} ({:.0f}% own; {})\n",
                     kernels.value("own_ms", 0.0), kernels.value("own_calls", 0), kernels.value("library_ms", 0.0),
                     kernels.value("library_calls", 0), 100 * kernels.value("own_share", 0.0), kernels.value("source", ""));
  for (const std::string& w : warnings) s += "  warning: " + w + "\n";
  if (!compiler_output.empty() && status == VerdictStatus::kCompileError) s += compiler_output + "\n";
  return s;
}

}  // namespace kforge
