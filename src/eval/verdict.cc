#include "kforge/verdict.h"

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
    case VerdictStatus::kCorrect: return "correct";
  }
  return "unknown";
}

TimingStats ComputeStats(const std::vector<double>& device_ms, const std::vector<double>& host_ms) {
  TimingStats t;
  t.runs = static_cast<int>(device_ms.size());
  if (device_ms.empty()) return t;
  std::vector<double> s = device_ms;
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  t.median_ms = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  t.min_ms = s.front();
  for (double x : s) t.mean_ms += x;
  t.mean_ms /= n;
  double var = 0;
  for (double x : s) var += (x - t.mean_ms) * (x - t.mean_ms);
  t.stdev_ms = n > 1 ? std::sqrt(var / (n - 1)) : 0;
  t.cv = t.mean_ms > 0 ? t.stdev_ms / t.mean_ms : 0;
  if (!host_ms.empty()) {
    std::vector<double> h = host_ms;
    std::sort(h.begin(), h.end());
    t.host_median_ms = h.size() % 2 ? h[h.size() / 2] : 0.5 * (h[h.size() / 2 - 1] + h[h.size() / 2]);
  }
  return t;
}

nlohmann::json TimingToJson(const TimingStats& t) {
  return {{"runs", t.runs}, {"median_ms", t.median_ms}, {"min_ms", t.min_ms},
          {"mean_ms", t.mean_ms}, {"stdev_ms", t.stdev_ms}, {"cv", t.cv},
          {"host_median_ms", t.host_median_ms}};
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
  if (!resources.empty()) j["resources"] = resources;
  if (!profile.empty()) j["profile"] = profile;
  if (!sanitizer.empty()) j["sanitizer"] = sanitizer;
  if (timing) {
    j["timing"] = TimingToJson(*timing);
    j["roofline"] = {{"floor_ms", floor_ms}, {"sol_percent", sol_percent}, {"flops", flops}, {"bytes", bytes}};
  }
  nlohmann::json b = nlohmann::json::object();
  for (const auto& [name, t] : baselines) b[name] = TimingToJson(t);
  j["baselines"] = b;
  j["speedups"] = speedups;
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
    s += fmt::format("  roofline floor {:.4f} ms  SOL {:.1f}%\n", floor_ms, sol_percent);
  }
  s += DescribePrecision(precision, "  ");
  for (const auto& [name, t] : baselines) {
    auto it = speedups.find(name);
    s += fmt::format("  vs {:<9} {:.4f} ms  speedup {:.2f}x\n", name, t.median_ms,
                     it == speedups.end() ? 0.0 : it->second);
  }
  for (const std::string& w : warnings) s += "  warning: " + w + "\n";
  if (!compiler_output.empty() && status == VerdictStatus::kCompileError) s += compiler_output + "\n";
  return s;
}

}  // namespace kforge
