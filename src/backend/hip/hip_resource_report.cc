#include "backend/hip/hip_resource_report.h"

#include <cxxabi.h>

#include <cstdlib>
#include <regex>
#include <sstream>

namespace kforge {

namespace {

std::string Demangle(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

// The remark's label (without its [unit]) -> the key in `resources`.
const char* KeyFor(const std::string& label) {
  static const std::pair<const char*, const char*> kKeys[] = {
      {"SGPRs", "sgprs"},
      {"VGPRs", "vgprs"},
      {"AGPRs", "agprs"},
      {"ScratchSize", "scratch_bytes_per_lane"},
      {"Occupancy", "occupancy_waves_per_simd"},
      {"SGPRs Spill", "sgpr_spills"},
      {"VGPRs Spill", "vgpr_spills"},
      {"LDS Size", "lds_bytes"},
  };
  for (const auto& [l, k] : kKeys)
    if (label == l) return k;
  return nullptr;
}

}  // namespace

nlohmann::json ParseHipResourceReport(const std::string& log) {
  static const std::regex kName(
      R"(remark: Function Name: (\S+) \[-Rpass-analysis=kernel-resource-usage\])");
  // "remark:     LDS Size [bytes/block]: 1024 [-Rpass-analysis=...]"
  static const std::regex kValue(
      R"(remark:\s+([A-Za-z ]+?)(?: \[[^\]]*\])?: (\d+) \[-Rpass-analysis=kernel-resource-usage\])");
  nlohmann::json kernels = nlohmann::json::array();
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kName)) {
      kernels.push_back({{"name", Demangle(m[1])}, {"mangled", std::string(m[1])}});
    } else if (!kernels.empty() && std::regex_search(line, m, kValue)) {
      if (const char* key = KeyFor(m[1])) kernels.back()[key] = std::stoll(m[2]);
    }
  }
  bool spills = false, scratch = false;
  for (const nlohmann::json& k : kernels) {
    spills |= k.value("sgpr_spills", 0) > 0 || k.value("vgpr_spills", 0) > 0;
    scratch |= k.value("scratch_bytes_per_lane", 0) > 0;
  }
  return {{"kernels", kernels}, {"spills", spills}, {"scratch", scratch}};
}

}  // namespace kforge
