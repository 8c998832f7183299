#include "backend/cuda/cuda_tools.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Warp-stall reasons from ncu's WarpStateStats section: cycles a warp spends stalled for that
// reason per issued instruction.
const char* const kStalls[] = {"long_scoreboard", "short_scoreboard", "barrier", "mio_throttle",
                               "lg_throttle", "math_pipe_throttle", "wait", "not_selected",
                               "membar", "dispatch_stall", "no_instruction", "branch_resolving",
                               "tex_throttle", "drain", "sleeping", "imc_miss"};
const char kStallPrefix[] = "smsp__average_warps_issue_stalled_";
const char kStallSuffix[] = "_per_issue_active.ratio";

// One CSV line into fields (double quotes, "" escapes).
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') { cur += '"'; ++i; }
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) { out.push_back(cur); cur.clear(); }
    else if (c != '\r') cur += c;
  }
  out.push_back(cur);
  return out;
}

// "1,234.5" -> 1234.5; false when not a number (ncu prints "n/a" for unsupported metrics).
bool ParseNumber(std::string s, double* v) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

// Seconds in one `unit` of time: "ns"/"nsecond", "us"/"usecond", "ms"/"msecond", "s"/"second"
// (ncu prints either spelling depending on version and --print-units); 0 when unknown.
double SecondsPer(const std::string& unit) {
  static const std::map<std::string, double> kTime = {
      {"ns", 1e-9}, {"nsecond", 1e-9}, {"us", 1e-6}, {"usecond", 1e-6}, {"ms", 1e-3},
      {"msecond", 1e-3}, {"s", 1}, {"second", 1}, {"sec", 1}};
  auto it = kTime.find(unit);
  return it == kTime.end() ? 0 : it->second;
}

// Bytes in one `unit` of data: "byte", "Kbyte", "Mbyte", "Gbyte", "Tbyte" (also "B", "KB", ...).
double BytesPer(const std::string& unit) {
  static const std::map<std::string, double> kBytes = {
      {"byte", 1}, {"B", 1}, {"Kbyte", 1e3}, {"KB", 1e3}, {"Mbyte", 1e6}, {"MB", 1e6},
      {"Gbyte", 1e9}, {"GB", 1e9}, {"Tbyte", 1e12}, {"TB", 1e12}};
  auto it = kBytes.find(unit);
  return it == kBytes.end() ? 0 : it->second;
}

// Scales a value in `unit` to milliseconds (keys ending in _ms) or GB/s (keys ending in _gbs);
// other keys, and units it does not know, are left as they are.
double Normalize(const std::string& key, const std::string& unit, double v) {
  auto ends = [&](const char* s) { size_t n = std::strlen(s); return key.size() > n && key.compare(key.size() - n, n, s) == 0; };
  if (ends("_ms")) {
    double s = SecondsPer(unit);
    return s > 0 ? v * s * 1e3 : v;
  }
  if (ends("_gbs")) {
    size_t slash = unit.find('/');
    if (slash == std::string::npos) return v;
    double b = BytesPer(unit.substr(0, slash)), s = SecondsPer(unit.substr(slash + 1));
    return b > 0 && s > 0 ? v * b / s / 1e9 : v;
  }
  return v;
}

std::string BaseName(const std::string& metric) {
  size_t dot = metric.find('.');
  return dot == std::string::npos ? metric : metric.substr(0, dot);
}

struct KernelAcc {
  std::string name;
  std::map<std::string, int> launch_ids;
  std::map<std::string, std::pair<double, int>> sums;  // key -> (sum, count)
};

json Finish(const KernelAcc& k) {
  json j = {{"name", k.name}, {"launches", k.launch_ids.size()}};
  json stalls = json::array();
  for (const auto& [key, sc] : k.sums) {
    double mean = sc.first / std::max(sc.second, 1);
    if (key.rfind("stall:", 0) == 0) stalls.push_back({{"reason", key.substr(6)}, {"cycles_per_issue", mean}});
    else j[key] = mean;
  }
  std::sort(stalls.begin(), stalls.end(), [](const json& a, const json& b) {
    return a["cycles_per_issue"].get<double>() > b["cycles_per_issue"].get<double>();
  });
  if (stalls.size() > 5) stalls.erase(stalls.begin() + 5, stalls.end());
  j["top_stalls"] = stalls;
  return j;
}

std::string RunText(ProcessRunner& runner, const std::vector<std::string>& argv) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.cwd = "/";
  const char* path = std::getenv("PATH");
  spec.env = {{"PATH", path ? path : "/usr/bin:/bin"}, {"HOME", "/tmp"}, {"LC_ALL", "C"}};
  spec.limits.wall_seconds = 60;
  spec.limits.address_space_bytes = 0;
  spec.limits.output_bytes = 4 << 20;
  spec.limits.drop_privileges = false;
  ProcessResult r = runner.Run(spec);
  return r.Succeeded() ? r.out : "";
}

}  // namespace

const std::vector<NcuMetric>& NcuMetrics() {
  static const std::vector<NcuMetric> kMetrics = [] {
    std::vector<NcuMetric> m = {
        {"gpu__time_duration.sum", "duration_ms"},
        {"dram__bytes.sum.per_second", "dram_bandwidth_gbs"},
        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "memory_throughput_pct"},
        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm_throughput_pct"},
        {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor_pipe_pct"},
        {"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor_pipe_wgmma_pct"},
        {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "fma_pipe_pct"},
        {"sm__warps_active.avg.pct_of_peak_sustained_active", "achieved_occupancy_pct"},
        {"l1tex__t_sector_hit_rate.pct", "l1_hit_rate_pct"},
        {"lts__t_sector_hit_rate.pct", "l2_hit_rate_pct"},
        {"launch__registers_per_thread", "registers_per_thread"},
    };
    static std::vector<std::string> names;  // storage for the stall metric names
    for (const char* s : kStalls) names.push_back(std::string(kStallPrefix) + s + kStallSuffix);
    for (size_t i = 0; i < names.size(); ++i) m.push_back({names[i].c_str(), kStalls[i]});
    return m;
  }();
  return kMetrics;
}

std::string FindCudaTool(const std::string& name) {
  std::string env_name = "KFORGE_" + name;
  for (char& c : env_name) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (const char* v = std::getenv(env_name.c_str()); v && *v) return v;
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/local/cuda/bin";
  std::istringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path p = fs::path(dir) / name;
    if (!dir.empty() && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

std::vector<std::string> AvailableNcuMetrics(ProcessRunner& runner, const std::string& ncu) {
  static std::mutex mu;
  static std::map<std::string, std::vector<std::string>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(ncu); it != cache.end()) return it->second;
  std::vector<std::string> names;
  std::istringstream in(RunText(runner, {ncu, "--query-metrics"}));
  std::string line;
  while (std::getline(in, line)) {
    size_t end = line.find_first_of(" \t");
    std::string first = line.substr(0, end);
    if (first.find("__") != std::string::npos) names.push_back(first);
  }
  cache[ncu] = names;
  return names;
}

std::vector<std::string> NcuCommand(const std::string& ncu, const std::vector<std::string>& available) {
  std::string list;
  for (const NcuMetric& m : NcuMetrics()) {
    std::string base = BaseName(m.metric);
    bool ok = available.empty() || std::find(available.begin(), available.end(), base) != available.end() ||
              base.rfind("gpu__time_duration", 0) == 0 || base.rfind("launch__", 0) == 0;
    if (ok) list += (list.empty() ? "" : ",") + std::string(m.metric);
  }
  return {ncu, "--clock-control", "none", "--print-units", "base", "--csv", "--target-processes", "all",
          "--metrics", list};
}

json ParseNcuCsv(const std::string& text) {
  std::map<std::string, std::string> key_of;
  for (const NcuMetric& m : NcuMetrics()) key_of[m.metric] = std::string(BaseName(m.metric).rfind(kStallPrefix, 0) == 0 ? "stall:" : "") + m.key;
  std::istringstream in(text);
  std::string line;
  std::map<std::string, int> col;
  std::vector<KernelAcc> kernels;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '"') continue;
    std::vector<std::string> f = SplitCsv(line);
    if (col.empty()) {
      for (size_t i = 0; i < f.size(); ++i) col[f[i]] = static_cast<int>(i);
      if (!col.count("Kernel Name") || !col.count("Metric Name") || !col.count("Metric Value")) col.clear();
      continue;
    }
    auto field = [&](const char* name) { auto it = col.find(name); return it != col.end() && it->second < (int)f.size() ? f[it->second] : std::string(); };
    std::string name = field("Kernel Name"), metric = field("Metric Name");
    auto k = key_of.find(metric);
    double v = 0;
    if (k == key_of.end() || !ParseNumber(field("Metric Value"), &v)) continue;
    auto acc = std::find_if(kernels.begin(), kernels.end(), [&](const KernelAcc& a) { return a.name == name; });
    if (acc == kernels.end()) { kernels.push_back({name, {}, {}}); acc = kernels.end() - 1; }
    acc->launch_ids[field("ID")] = 1;
    auto& sc = acc->sums[k->second];
    sc.first += Normalize(k->second, field("Metric Unit"), v);
    sc.second += 1;
  }
  json out = {{"kernels", json::array()}, {"duration_ms", 0.0}};
  double total = 0;
  for (const KernelAcc& k : kernels) {
    json j = Finish(k);
    total += j.value("duration_ms", 0.0) * j["launches"].get<double>();
    out["kernels"].push_back(j);
  }
  out["duration_ms"] = total;  // all profiled launches of one call
  if (col.empty()) out["error"] = "no ncu CSV table in the output";
  return out;
}

std::vector<std::string> SanitizerCommand(const std::string& sanitizer, const std::string& tool) {
  return {sanitizer, "--tool", tool, "--error-exitcode", "0", "--print-limit", "20", "--target-processes", "all"};
}

json SummarizeSanitizer(const std::string& tool, const std::string& output) {
  std::istringstream in(output);
  std::string line, report;
  int errors = -1, lines = 0;
  while (std::getline(in, line)) {
    if (line.rfind("========", 0) != 0) continue;
    if (size_t p = line.find("ERROR SUMMARY: "); p != std::string::npos) errors = std::atoi(line.c_str() + p + 15);
    if (lines++ < 60) report += line + "\n";
  }
  json j = {{"tool", tool}, {"errors", errors}, {"clean", errors == 0}, {"report", report}};
  if (errors < 0) j["error"] = "no compute-sanitizer summary in the output";
  return j;
}

}  // namespace kforge
