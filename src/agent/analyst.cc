#include "agent/analyst.h"

#include <fmt/format.h>

namespace kforge {

using nlohmann::json;

json Recommendation::ToJson() const {
  return {{"bottleneck", bottleneck}, {"evidence", evidence}, {"change", change},
          {"expected_gain", expected_gain}, {"source", source}};
}

std::string Recommendation::ToText() const {
  return "- Bottleneck: " + bottleneck + "\n- Evidence: " + evidence + "\n- Change: " + change +
         "\n- Expected gain: " + expected_gain + "\n";
}

json BuildProfile(const Verdict& v) {
  json p = {{"problem", v.problem}, {"backend", v.backend}, {"sizes", v.sizes}};
  if (v.timing) p["timing"] = TimingToJson(*v.timing);
  double ms = v.timing ? v.timing->median_ms : 0;
  double bw = v.fingerprint.value("peaks", json::object()).value("bandwidth_gbs", 0.0);
  double fl = v.fingerprint.value("peaks", json::object()).value("fp32_gflops", 0.0);
  // The measured (achievable) peaks: the roofline a kernel can actually approach.
  json r = {{"flops", v.flops}, {"bytes", v.bytes}, {"floor_ms", v.achievable_floor_ms}, {"sol_percent", v.sol_percent},
            {"peak_bandwidth_gbs", bw}, {"peak_gflops", fl}, {"theoretical_floor_ms", v.floor_ms}};
  if (ms > 0) {
    r["achieved_gbs"] = v.bytes / (ms * 1e-3) / 1e9;
    r["achieved_gflops"] = v.flops / (ms * 1e-3) / 1e9;
  }
  if (v.bytes > 0) r["arithmetic_intensity"] = v.flops / v.bytes;
  if (bw > 0) r["ridge_point"] = fl / bw;
  double t_mem = bw > 0 ? v.bytes / (bw * 1e9) : 0, t_cmp = fl > 0 ? v.flops / (fl * 1e9) : 0;
  r["bound"] = t_mem >= t_cmp ? "memory" : "compute";
  p["roofline"] = r;
  for (const auto& [name, t] : v.baselines) p["baselines"][name] = TimingToJson(t);
  if (v.ToJson().contains("profile")) p["counters"] = v.ToJson()["profile"];
  return p;
}

Recommendation RuleAnalyst(const json& profile) {
  Recommendation r;
  r.source = "rules";
  const json& roof = profile.value("roofline", json::object());
  double sol = roof.value("sol_percent", 0.0);
  std::string bound = roof.value("bound", "memory");
  double cv = profile.value("timing", json::object()).value("cv", 0.0);
  r.evidence = fmt::format("SOL {:.1f}% of the {}-bound floor; achieved {:.1f} GB/s of {:.1f}, {:.1f} GFLOP/s of {:.1f}; "
                           "arithmetic intensity {:.2f} flop/byte; timing CV {:.1f}%",
                           sol, bound, roof.value("achieved_gbs", 0.0), roof.value("peak_bandwidth_gbs", 0.0),
                           roof.value("achieved_gflops", 0.0), roof.value("peak_gflops", 0.0),
                           roof.value("arithmetic_intensity", 0.0), 100 * cv);
  double headroom = sol > 0 ? 100.0 / sol : 1;
  if (sol < 10) {
    r.bottleneck = "latency and parallelism: far below both roofs";
    r.change = "use every core or compute unit (parallelize the outer loop or launch more work-items), vectorize the inner loop, and remove per-element redundant work";
  } else if (bound == "memory" && sol < 60) {
    r.bottleneck = "memory access efficiency";
    r.change = "read each input once with unit-stride vector loads, fuse passes over the same data, and size blocks or work-groups to keep accesses contiguous";
  } else if (bound == "compute" && sol < 60) {
    r.bottleneck = "arithmetic throughput";
    r.change = "block for registers (compute a small tile of outputs per thread or work-item), keep FMAs in independent chains, and stage reused operands in cache or local memory";
  } else {
    r.bottleneck = "near the roofline";
    r.change = "tune block and work-group sizes; large structural changes have little headroom left";
  }
  r.expected_gain = fmt::format("at most {:.1f}x to the roofline floor", headroom);
  return r;
}

Result<Recommendation> ParseRecommendation(const std::string& answer) {
  size_t open = answer.find('{');
  size_t close = answer.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return Status::InvalidArgument("the analyst's answer holds no JSON object; answer with {\"bottleneck\", \"evidence\", \"change\", \"expected_gain\"}");
  json j = json::parse(answer.substr(open, close - open + 1), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("the analyst's JSON does not parse; answer with one JSON object only");
  auto text = [&](const char* key) {
    if (!j.contains(key)) return std::string();
    return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
  };
  Recommendation r{text("bottleneck"), text("evidence"), text("change"), text("expected_gain"), "llm"};
  if (r.change.empty()) return Status::InvalidArgument("the analyst's JSON has no \"change\"; say what to change");
  return r;
}

}  // namespace kforge
