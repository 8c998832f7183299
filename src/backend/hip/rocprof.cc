#include "backend/hip/rocprof.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// One CSV line into fields (double quotes, "" escapes), as rocprof writes them.
std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cur += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool ParseNumber(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

// A CSV with a header row: the column names, and each later row as {column: text}.
struct Table {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
  bool Has(const char* column) const {
    return std::find(header.begin(), header.end(), column) != header.end();
  }
};

Table ReadTable(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  Table t;
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> f = SplitCsv(line);
    if (t.header.empty()) {
      t.header = f;
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < f.size() && i < t.header.size(); ++i) row[t.header[i]] = f[i];
    t.rows.push_back(row);
  }
  return t;
}

// rocprof v1 names a kernel by its code object symbol, "f(int) [clone .kd]"; the suffix is not
// part of the kernel's name.
std::string CleanName(std::string name) {
  const std::string kd = " [clone .kd]";
  if (name.size() >= kd.size() && name.compare(name.size() - kd.size(), kd.size(), kd) == 0)
    name.resize(name.size() - kd.size());
  return name;
}

// Per kernel name: sums and counts of each key, in first-seen order.
struct Acc {
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, std::pair<double, int>>> sums;
  std::map<std::string, int> launches;
  void Add(const std::string& kernel, const std::string& key, double v) {
    if (!sums.count(kernel)) order.push_back(kernel);
    auto& sc = sums[kernel][key];
    sc.first += v;
    sc.second += 1;
  }
  json Finish(const char* tool) const {
    json out = {{"kernels", json::array()}, {"duration_ms", 0.0}, {"tool", tool}};
    double total = 0;
    for (const std::string& k : order) {
      json j = {{"name", k},
                {"launches", launches.count(k) ? launches.at(k) : 0},
                {"top_stalls", json::array()}};
      for (const auto& [key, sc] : sums.at(k)) j[key] = sc.first / std::max(sc.second, 1);
      total += j.value("duration_ms", 0.0) * j["launches"].get<double>();
      out["kernels"].push_back(j);
    }
    out["duration_ms"] = total;
    return out;
  }
};

// rocprof counter name -> profile key.
const std::pair<const char*, const char*> kCounters[] = {
    {"VALUUtilization", "valu_utilization_pct"},
    {"VALUBusy", "valu_busy_pct"},
    {"SALUBusy", "salu_busy_pct"},
    {"MemUnitBusy", "memory_unit_busy_pct"},
    {"L2CacheHit", "l2_hit_rate_pct"},
    {"LDSBankConflict", "lds_bank_conflict_pct"},
    {"Wavefronts", "wavefronts"},
};

// Kernel resources as both rocprof generations name them.
const std::pair<const char*, const char*> kResources[] = {
    {"vgpr", "vgprs"},
    {"arch_vgpr", "vgprs"},
    {"VGPR_Count", "vgprs"},
    {"accum_vgpr", "agprs"},
    {"Accum_VGPR_Count", "agprs"},
    {"sgpr", "sgprs"},
    {"SGPR_Count", "sgprs"},
    {"lds", "lds_bytes"},
    {"LDS_Block_Size", "lds_bytes"},
    {"scr", "scratch_bytes"},
    {"Scratch_Size", "scratch_bytes"},
};

std::string Get(const std::map<std::string, std::string>& row, const char* key) {
  auto it = row.find(key);
  return it == row.end() ? "" : it->second;
}

// Duration of one dispatch row in ns: EndNs - BeginNs (v1), End_Timestamp - Start_Timestamp
// (v3), or DurationNs; < 0 when the row has none.
double DispatchNs(const std::map<std::string, std::string>& row) {
  double b = 0, e = 0, d = 0;
  if (ParseNumber(Get(row, "BeginNs"), &b) && ParseNumber(Get(row, "EndNs"), &e)) return e - b;
  if (ParseNumber(Get(row, "Start_Timestamp"), &b) && ParseNumber(Get(row, "End_Timestamp"), &e))
    return e - b;
  if (ParseNumber(Get(row, "DurationNs"), &d)) return d;
  return -1;
}

// rocprof's files lie in the candidate's job folder: a link or a FIFO planted in one's place is
// not read (ReadUntrustedFile), and nothing over 256 MiB is.
std::string ReadAll(const fs::path& p) {
  Result<std::string> text = ReadUntrustedFile(p, 256ull << 20);
  return text.ok() ? *text : std::string();
}

double JsonNumber(const json& v) {
  if (v.is_number()) return v.get<double>();
  double d = 0;
  if (v.is_string() && ParseNumber(v.get<std::string>(), &d)) return d;
  return -1;
}

}  // namespace

json ParseRocprofDispatchCsv(const std::string& text) {
  Table table = ReadTable(text);
  const char* name_col = table.Has("KernelName")    ? "KernelName"
                         : table.Has("Kernel_Name") ? "Kernel_Name"
                                                    : nullptr;
  if (!name_col)
    return {{"kernels", json::array()},
            {"duration_ms", 0.0},
            {"tool", "rocprof"},
            {"error", "no KernelName or Kernel_Name column: not a rocprof dispatch CSV"}};
  Acc acc;
  for (const auto& row : table.rows) {
    std::string kernel = CleanName(Get(row, name_col));
    if (kernel.empty()) continue;
    double ns = DispatchNs(row), v = 0;
    acc.launches[kernel] += 1;
    if (ns >= 0) acc.Add(kernel, "duration_ms", ns / 1e6);
    for (const auto& [col, key] : kCounters)
      if (ParseNumber(Get(row, col), &v)) acc.Add(kernel, key, v);
    for (const auto& [col, key] : kResources)
      if (ParseNumber(Get(row, col), &v)) acc.Add(kernel, key, v);
    double fetch = 0, write = 0;
    if (ns > 0 && ParseNumber(Get(row, "FetchSize"), &fetch) &&
        ParseNumber(Get(row, "WriteSize"), &write))
      acc.Add(kernel, "dram_bandwidth_gbs", (fetch + write) * 1024 / ns);  // bytes per ns = GB/s
  }
  return acc.Finish("rocprof");
}

json ParseRocprofStatsCsv(const std::string& text) {
  Table table = ReadTable(text);
  if (!table.Has("Name") || !table.Has("AverageNs"))
    return {{"kernels", json::array()},
            {"duration_ms", 0.0},
            {"tool", "rocprof"},
            {"error", "no Name and AverageNs columns: not a rocprof stats CSV"}};
  Acc acc;
  for (const auto& row : table.rows) {
    double calls = 0, avg = 0;
    std::string name = CleanName(Get(row, "Name"));
    if (name.empty() || !ParseNumber(Get(row, "Calls"), &calls) ||
        !ParseNumber(Get(row, "AverageNs"), &avg))
      continue;
    acc.Add(name, "duration_ms", avg / 1e6);
    acc.launches[name] += static_cast<int>(calls);
  }
  return acc.Finish("rocprof");
}

json ParseRocprofTraceJson(const std::string& text) {
  json t = json::parse(text, nullptr, false);
  json fail = {{"kernels", json::array()}, {"duration_ms", 0.0}, {"tool", "rocprof"}};
  if (t.is_discarded() || !t.is_object() || !t.contains("traceEvents") ||
      !t["traceEvents"].is_array()) {
    fail["error"] = "not a Chrome trace (no traceEvents array)";
    return fail;
  }
  std::map<std::string, bool> gpu_lane;  // pid (as text) -> its process_name starts with "GPU"
  for (const json& e : t["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "M" || e.value("name", "") != "process_name")
      continue;
    std::string lane =
        e.contains("args") && e["args"].is_object() ? e["args"].value("name", "") : "";
    gpu_lane[e.contains("pid") ? e["pid"].dump() : ""] = lane.rfind("GPU", 0) == 0;
  }
  Acc acc;
  for (const json& e : t["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("pid")) continue;
    auto lane = gpu_lane.find(e["pid"].dump());
    if (lane == gpu_lane.end() || !lane->second) continue;
    std::string name = e.value("name", "");
    double dur_us = e.contains("dur") ? JsonNumber(e["dur"]) : -1;
    if (name.empty() || dur_us < 0) continue;
    acc.Add(name, "duration_ms", dur_us / 1e3);
    acc.launches[name] += 1;
  }
  json out = acc.Finish("rocprof");
  if (gpu_lane.empty())
    out["error"] = "the trace names no lanes (no process_name metadata), so no GPU lane";
  return out;
}

json ParseRocprofFolder(const std::string& dir) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (e.symlink_status().type() == fs::file_type::regular) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  auto find = [&](auto pred) -> fs::path {
    for (const fs::path& f : files)
      if (pred(f.filename().string())) return f;
    return {};
  };
  auto ends = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  struct Try {
    fs::path file;
    json (*parse)(const std::string&);
  };
  const Try tries[] = {
      {find(
           [&](const std::string& n) { return n == "results.csv" || ends(n, "kernel_trace.csv"); }),
       ParseRocprofDispatchCsv},
      {find([&](const std::string& n) {
         return ends(n, ".stats.csv") && n.find("hip_") == std::string::npos &&
                n.find("copy_") == std::string::npos;
       }),
       ParseRocprofStatsCsv},
      {find([&](const std::string& n) { return ends(n, ".json"); }), ParseRocprofTraceJson},
  };
  std::string why;
  for (const Try& t : tries) {
    if (t.file.empty()) continue;
    json p = t.parse(ReadAll(t.file));
    if (!p.contains("error") && !p["kernels"].empty()) {
      p["source"] = t.file.filename().string();
      return p;
    }
    why += (why.empty() ? "" : "; ") + t.file.filename().string() + ": " +
           p.value("error", std::string("no kernels"));
  }
  return {{"kernels", json::array()},
          {"duration_ms", 0.0},
          {"tool", "rocprof"},
          {"error", "no rocprof output in " + dir +
                        (why.empty() ? " (no results.csv, kernel_trace.csv, stats.csv or .json)"
                                     : ": " + why)}};
}

std::string RocprofInputFile() {
  std::string line = "pmc:";
  for (const auto& [counter, key] : kCounters) line += std::string(" ") + counter;
  return "# kforge: counters for the verdict's profile (docs/profiling.md)\n" + line +
         " FetchSize WriteSize\n";
}

std::vector<std::string> RocprofCommand(const std::string& rocprof, const std::string& input_file,
                                        const std::string& out_dir) {
  return {rocprof, "-i",      input_file, "--timestamp",
          "on",    "--stats", "-o",       (fs::path(out_dir) / "results.csv").string()};
}

std::vector<std::string> RocprofWrapper(const std::string& rocprof) {
  std::vector<std::string> argv = {
      "/bin/sh", "-c",
      "printf '%s' \"$1\" > rocprof_input.txt && mkdir -p rocprof && shift && exec \"$@\"",
      "kforge-rocprof", RocprofInputFile()};
  for (const std::string& a : RocprofCommand(rocprof, "rocprof_input.txt", "rocprof"))
    argv.push_back(a);
  return argv;
}

std::string FindRocprof() {
  if (const char* env = std::getenv("KFORGE_ROCPROF"); env && *env)
    return access(env, X_OK) == 0 ? env : "";
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/opt/rocm/bin";
  std::istringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path p = fs::path(dir) / "rocprof";
    if (!dir.empty() && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

}  // namespace kforge
