// Theoretical peaks. Every constant below is an upper bound with its reason; the docs
// (docs/evaluation.md, "Speed of light") list the same choices.
#include "backend/theoretical_peaks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "base/files.h"

namespace kforge {

namespace {

using nlohmann::json;

// The highest boost clock any CPU ships with (Core i9-14900KS, 2024).
constexpr double kFastestCpuClockGhz = 6.2;
// Above the largest boost/nominal ratio of the CPUs whose model name states a nominal clock
// (about 4.3: a Core i7-10710U runs 1.1 GHz nominal, 4.7 GHz boost).
constexpr double kBoostOverNominal = 5.0;
// Above the boost clock of every NVIDIA GPU (the fastest boost about 2.6 GHz).
constexpr double kUnknownGpuClockMhz = 3500;
// Bytes of loads and stores per clock and SM or compute unit: above the L1 and shared-memory
// bandwidth of every GPU kforge knows (NVIDIA SMs move 128 bytes per clock).
constexpr double kPortBytesPerComputeUnitClock = 512;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// /proc/cpuinfo: one "key : value" map per processor block (blocks end at a blank line).
std::vector<std::map<std::string, std::string>> ParseCpuInfo(const std::string& text) {
  std::vector<std::map<std::string, std::string>> blocks(1);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (Trim(line).empty()) {
      if (!blocks.back().empty()) blocks.emplace_back();
    } else if (colon != std::string::npos) {
      blocks.back()[Trim(line.substr(0, colon))] = Trim(line.substr(colon + 1));
    }
  }
  if (blocks.back().empty()) blocks.pop_back();
  std::erase_if(blocks, [](const auto& b) { return !b.count("processor"); });
  return blocks;
}

std::set<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

std::string Field(const std::map<std::string, std::string>& block, const std::string& key) {
  auto it = block.find(key);
  return it == block.end() ? "" : it->second;
}

struct Count {
  int n = 1;
  std::string source;
};

// Physical cores on bare metal; logical CPUs when a hypervisor may map vCPUs onto separate
// cores whatever topology it reports, or when core ids are missing.
Count CountCores(const std::vector<std::map<std::string, std::string>>& blocks, bool hypervisor) {
  int logical = std::max<int>(1, static_cast<int>(blocks.size()));
  std::set<std::pair<std::string, std::string>> ids;
  bool all_ids = !blocks.empty();
  for (const auto& b : blocks) {
    if (!b.count("physical id") || !b.count("core id"))
      all_ids = false;
    else
      ids.insert({b.at("physical id"), b.at("core id")});
  }
  if (hypervisor)
    return {logical, "logical CPUs (a virtual machine: its vCPU topology is not trusted)"};
  if (!all_ids) return {logical, "logical CPUs (no core ids in /proc/cpuinfo)"};
  return {static_cast<int>(ids.size()), "physical cores (distinct physical id, core id)"};
}

struct Clock {
  double ghz = kFastestCpuClockGhz;
  std::string source;
};

// Drivers whose cpuinfo_max_freq is the boost clock; acpi-cpufreq reports the nominal one.
bool ReportsBoostClock(const std::string& driver) {
  static const std::set<std::string> kDrivers = {"intel_pstate", "intel_cpufreq", "amd-pstate",
                                                 "amd-pstate-epp", "cppc_cpufreq"};
  return kDrivers.count(driver) > 0;
}

Clock MaxCpuClock(const CpuFacts& f, const std::string& model) {
  if (f.cpufreq_max_khz > 0 && ReportsBoostClock(f.cpufreq_driver))
    return {f.cpufreq_max_khz / 1e6,
            "cpuinfo_max_freq (" + f.cpufreq_driver + " reports the boost clock)"};
  double nominal = 0;
  std::string from;
  std::smatch m;
  static const std::regex kGhz(R"(@\s*([0-9]+(?:\.[0-9]+)?)\s*GHz)");
  if (std::regex_search(model, m, kGhz)) {
    nominal = std::stod(m[1]);
    from = "the model name";
  } else if (f.cpufreq_max_khz > 0) {
    nominal = f.cpufreq_max_khz / 1e6;
    from = "cpuinfo_max_freq of " +
           (f.cpufreq_driver.empty() ? std::string("an unknown driver") : f.cpufreq_driver);
  }
  if (nominal <= 0)
    return {kFastestCpuClockGhz,
            fmt::format("no max clock known (no cpufreq, no clock in the model name): {} GHz, "
                        "the highest boost clock of any CPU",
                        kFastestCpuClockGhz)};
  double ghz = std::min(kBoostOverNominal * nominal, kFastestCpuClockGhz);
  return {ghz, fmt::format("min({} x nominal {:.2f} GHz from {}, {} GHz)", kBoostOverNominal,
                           nominal, from, kFastestCpuClockGhz)};
}

// Operations per cycle of one core.
struct CoreUnit {
  std::string name;
  double per_cycle;
  int bits;
  std::string why;
};

struct Isa {
  std::string name;
  int vector_bytes = 64;
  std::vector<CoreUnit> units;
};

Isa X86Isa(const std::set<std::string>& flags) {
  Isa isa;
  isa.name = flags.count("avx512f") ? "x86 avx512f"
             : flags.count("avx2")  ? "x86 avx2"
             : flags.count("avx")   ? "x86 avx"
             : flags.count("sse")   ? "x86 sse"
                                    : "x86 (no vector flags)";
  isa.vector_bytes = flags.count("avx512f") ? 64
                     : flags.count("avx")   ? 32
                     : flags.count("sse")   ? 16
                                            : 64;
  double w = isa.vector_bytes;
  isa.units.push_back(
      {"fp32 simd", w / 4 * 6, 24,
       fmt::format("{} fp32 lanes x (2 FMA pipes x 2 flops + 2 add pipes)", w / 4)});
  if (flags.count("avx512_fp16"))
    isa.units.push_back(
        {"fp16 simd (avx512_fp16)", w / 2 * 6, 11, fmt::format("{} fp16 lanes x 6 flops", w / 2)});
  if (flags.count("avx512_bf16"))
    isa.units.push_back(
        {"bf16 dot (avx512_bf16)", 2 * w, 8, "2 pipes x vdpbf16ps (32 multiply-adds)"});
  if (flags.count("avx512_vnni"))
    isa.units.push_back(
        {"int8 dot (avx512_vnni)", 4 * w, 7, "2 pipes x vpdpbusd (64 multiply-adds)"});
  else if (flags.count("avx_vnni"))
    isa.units.push_back(
        {"int8 dot (avx_vnni)", 128, 7, "2 pipes x 256-bit vpdpbusd (32 multiply-adds)"});
  // AMX: Intel's per-core rates, 1024 bf16/fp16 flops and 2048 int8 operations per cycle.
  if (flags.count("amx_bf16"))
    isa.units.push_back({"amx_bf16", 1024, 8, "AMX tile multiply, 1024 flops"});
  if (flags.count("amx_fp16"))
    isa.units.push_back({"amx_fp16", 1024, 11, "AMX tile multiply, 1024 flops"});
  if (flags.count("amx_int8"))
    isa.units.push_back({"amx_int8", 2048, 7, "AMX tile multiply, 2048 operations"});
  static const std::set<std::string> kKnownAmx = {"amx_tile", "amx_bf16", "amx_fp16", "amx_int8"};
  for (const std::string& f : flags)
    if (f.rfind("amx_", 0) == 0 && !kKnownAmx.count(f))
      isa.units.push_back({f + " (not modelled)", 4096, 11,
                           "an AMX extension kforge does not know: 4096 operations assumed"});
  return isa;
}

// Arm, RISC-V, POWER, ...: widths and matrix units are not modelled, so assume the largest.
Isa UnknownIsa(const std::string& arch) {
  Isa isa;
  isa.name = arch + " (not modelled)";
  isa.vector_bytes = 64;
  isa.units.push_back(
      {"fp32 simd", 16 * 6, 24, "assumed 512-bit vectors: 16 fp32 lanes x 6 flops"});
  isa.units.push_back(
      {"matrix unit (assumed)", 2048, 11, "assumed an AMX-class matrix unit: 2048 operations"});
  return isa;
}

std::string ReadTrimmedLine(const std::filesystem::path& p) { return Trim(ReadFirstLine(p)); }

}  // namespace

json TheoreticalPeaksToJson(const TheoreticalPeaks& p) {
  json units = json::array();
  for (const ComputeUnit& u : p.units)
    units.push_back({{"name", u.name}, {"gops", u.gops}, {"precision_bits", u.precision_bits}});
  return {{"units", units},
          {"bandwidth_gbs", p.bandwidth_gbs},
          {"bandwidth_source", p.bandwidth_source},
          {"cache_resident_bytes", p.cache_resident_bytes},
          {"basis", p.basis}};
}

Result<TheoreticalPeaks> TheoreticalPeaksFromJson(const json& j) {
  if (!j.is_object() || !j.contains("units") || !j["units"].is_array() ||
      !j.contains("bandwidth_gbs"))
    return Status::InvalidArgument("theoretical peaks need `units` and `bandwidth_gbs`: " +
                                   j.dump().substr(0, 200));
  TheoreticalPeaks p;
  for (const json& u : j["units"])
    p.units.push_back({u.value("name", ""), u.value("gops", 0.0), u.value("precision_bits", 24)});
  p.bandwidth_gbs = j.value("bandwidth_gbs", 0.0);
  p.bandwidth_source = j.value("bandwidth_source", "");
  p.cache_resident_bytes = j.value("cache_resident_bytes", 0.0);
  p.basis = j.value("basis", json::object());
  return p;
}

CpuFacts ReadHostCpuFacts() {
  namespace fs = std::filesystem;
  CpuFacts f;
  std::ifstream in("/proc/cpuinfo");
  std::stringstream text;
  text << in.rdbuf();
  f.cpuinfo = text.str();
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    std::string khz = ReadTrimmedLine(e.path() / "cpufreq" / "cpuinfo_max_freq");
    if (!khz.empty()) f.cpufreq_max_khz = std::max(f.cpufreq_max_khz, std::atof(khz.c_str()));
  }
  f.cpufreq_driver = ReadTrimmedLine("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver");
  return f;
}

TheoreticalPeaks CpuTheoreticalPeaks(const CpuFacts& facts) {
  std::vector<std::map<std::string, std::string>> blocks = ParseCpuInfo(facts.cpuinfo);
  std::map<std::string, std::string> first =
      blocks.empty() ? std::map<std::string, std::string>{} : blocks[0];
  std::set<std::string> flags = Words(Field(first, "flags"));
  bool x86 = !Field(first, "vendor_id").empty() || flags.count("sse");
  std::string arch = !Field(first, "CPU implementer").empty() ? "arm" : "unknown ISA";
  std::string model = Field(first, "model name");
  Count cores = CountCores(blocks, flags.count("hypervisor") > 0);
  Clock clock = MaxCpuClock(facts, model);
  Isa isa = x86 ? X86Isa(flags) : UnknownIsa(arch);

  TheoreticalPeaks p;
  json per_core = json::object();
  for (const CoreUnit& u : isa.units) {
    p.units.push_back({u.name, cores.n * clock.ghz * u.per_cycle, u.bits});
    per_core[u.name] = {{"per_cycle", u.per_cycle}, {"why", u.why}};
  }
  p.bandwidth_gbs = cores.n * clock.ghz * 6 * isa.vector_bytes;
  p.bandwidth_source = fmt::format(
      "load/store ports: {} cores x {:.2f} GHz x (4 loads + 2 stores) x {} bytes per cycle "
      "(a CPU offers no reliable DRAM figure)",
      cores.n, clock.ghz, isa.vector_bytes);
  p.basis = {{"kind", "cpu"},          {"model", model.empty() ? "unknown" : model},
             {"isa", isa.name},        {"vector_bytes", isa.vector_bytes},
             {"cores", cores.n},       {"cores_source", cores.source},
             {"clock_ghz", clock.ghz}, {"clock_source", clock.source},
             {"per_core", per_core}};
  return p;
}

SmRates LookUpSmRates(int major, int minor, bool* exact) {
  // Dense rates per SM and clock from NVIDIA's datasheets (peak TFLOPS / SMs / the clock they
  // are quoted at), at full rate where consumer boards halve fp32-accumulate tensor math.
  static const SmRates kTable[] = {
      // major, minor, family, fp32, tf32, fp16, bf16, fp8, int8, int4, fp4
      {7, 0, "Volta (V100)", 128, 0, 1024, 0, 0, 512, 0, 0},  // int8: dp4a on the int32 lanes
      {7, 5, "Turing (T4, RTX 20)", 128, 0, 1024, 0, 0, 2048, 4096, 0},
      {8, 0, "Ampere (A100, A30)", 128, 1024, 2048, 2048, 0, 4096, 8192, 0},
      {8, 6, "Ampere (A10, A40, RTX 30)", 256, 512, 1024, 1024, 0, 2048, 4096, 0},
      {8, 9, "Ada (L4, L40S, RTX 40)", 256, 512, 1024, 1024, 2048, 2048, 4096, 0},
      {9, 0, "Hopper (H100, H200)", 256, 2048, 4096, 4096, 8192, 8192, 0, 0},
      {10, 0, "Blackwell (B200)", 256, 4096, 8192, 8192, 16384, 16384, 0, 32768},
      {12, 0, "Blackwell (RTX 50, RTX PRO 6000)", 256, 512, 1024, 1024, 2048, 2048, 0, 4096},
  };
  for (const SmRates& r : kTable) {
    if (r.major == major && r.minor == minor) {
      *exact = true;
      return r;
    }
  }
  *exact = false;
  SmRates x{major, minor,
            "not in kforge's table: twice the largest per-SM rate of any known architecture"};
  for (const SmRates& r : kTable) {
    x.fp32 = std::max(x.fp32, 2 * r.fp32), x.tf32 = std::max(x.tf32, 2 * r.tf32);
    x.fp16 = std::max(x.fp16, 2 * r.fp16), x.bf16 = std::max(x.bf16, 2 * r.bf16);
    x.fp8 = std::max(x.fp8, 2 * r.fp8), x.int8 = std::max(x.int8, 2 * r.int8);
    x.int4 = std::max(x.int4, 2 * r.int4), x.fp4 = std::max(x.fp4, 2 * r.fp4);
  }
  return x;
}

TheoreticalPeaks NvidiaTheoreticalPeaks(const NvidiaGpuFacts& f) {
  bool exact = false;
  SmRates r = LookUpSmRates(f.cc_major, f.cc_minor, &exact);
  double mhz = f.clock_mhz > 0 ? f.clock_mhz : kUnknownGpuClockMhz;
  double per_clock = f.sm_count * mhz * 1e6 / 1e9;  // SMs x clock in GHz
  TheoreticalPeaks p;
  const std::pair<const char*, std::pair<double, int>> formats[] = {
      {"fp32 cuda cores", {r.fp32, 24}}, {"tensor tf32", {r.tf32, 11}},
      {"tensor fp16", {r.fp16, 11}},     {"tensor bf16", {r.bf16, 8}},
      {"tensor fp8", {r.fp8, 4}},        {"tensor int8", {r.int8, 7}},
      {"tensor int4", {r.int4, 3}},      {"tensor fp4", {r.fp4, 2}}};
  for (const auto& [name, rate] : formats)
    if (rate.first > 0) p.units.push_back({name, per_clock * rate.first, rate.second});
  if (f.memory_bus_bits > 0 && f.memory_clock_mhz > 0) {
    p.bandwidth_gbs = f.memory_bus_bits / 8.0 * f.memory_clock_mhz * 2 / 1e3;
    p.bandwidth_source = fmt::format("dram: {}-bit bus x {:.0f} MHz x 2 (DDR)", f.memory_bus_bits,
                                     f.memory_clock_mhz);
    p.cache_resident_bytes = static_cast<double>(f.l2_bytes);
  } else {
    p.bandwidth_gbs = per_clock * kPortBytesPerComputeUnitClock;
    p.bandwidth_source = fmt::format(
        "load/store ports: {} SMs x {:.0f} MHz x {} bytes per clock (no memory attributes)",
        f.sm_count, mhz, kPortBytesPerComputeUnitClock);
  }
  p.basis = {{"kind", "nvidia gpu"},
             {"arch", fmt::format("sm_{}{}", f.cc_major, f.cc_minor)},
             {"family", r.family},
             {"table_row", exact},
             {"sm_count", f.sm_count},
             {"clock_mhz", mhz},
             {"clock_source",
              f.clock_mhz > 0 ? "the driver's maximum SM clock" : "unknown: 3.5 GHz assumed"},
             {"memory_clock_mhz", f.memory_clock_mhz},
             {"memory_bus_bits", f.memory_bus_bits},
             {"l2_bytes", f.l2_bytes}};
  return p;
}

TheoreticalPeaks GenericAcceleratorTheoreticalPeaks(int compute_units, double clock_mhz) {
  double mhz = clock_mhz > 0 ? clock_mhz : kUnknownGpuClockMhz;
  double per_clock = std::max(1, compute_units) * mhz * 1e6 / 1e9;
  TheoreticalPeaks p;
  p.units = {{"fp32 (assumed)", per_clock * 512, 24},
             {"16-bit matrix (assumed)", per_clock * 8192, 11},
             {"8-bit matrix (assumed)", per_clock * 16384, 7},
             {"4-bit matrix (assumed)", per_clock * 32768, 2}};
  p.bandwidth_gbs = per_clock * kPortBytesPerComputeUnitClock;
  p.bandwidth_source =
      fmt::format("load/store ports: {} compute units x {:.0f} MHz x {} bytes per clock",
                  compute_units, mhz, kPortBytesPerComputeUnitClock);
  p.basis = {{"kind", "accelerator (no table: generous per-compute-unit rates)"},
             {"compute_units", compute_units},
             {"clock_mhz", mhz}};
  return p;
}

int EmulationProducts(int unit_bits, int required_bits) {
  if (required_bits <= unit_bits + 1) return 1;
  int k = (required_bits + unit_bits) / (unit_bits + 1);  // ceil(required / (unit + 1))
  return k * (k + 1) / 2;
}

FlopCeiling FastestUnit(const std::vector<ComputeUnit>& units, int required_bits) {
  FlopCeiling best;
  for (const ComputeUnit& u : units) {
    int products = EmulationProducts(u.precision_bits, required_bits);
    if (u.gops / products > best.gflops) best = {u.gops / products, u.name, products};
  }
  return best;
}

}  // namespace kforge
