#include "backend/cuda/ptxas_report.h"

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

// Value of "<number> <unit>" inside a line, e.g. Number(line, "registers") for "Used 40
// registers"; -1 when absent.
int64_t Number(const std::string& line, const std::string& unit) {
  std::regex re("(\\d+) " + unit);
  std::smatch m;
  return std::regex_search(line, m, re) ? std::stoll(m[1]) : -1;
}

nlohmann::json& KernelNamed(nlohmann::json& kernels, const std::string& mangled) {
  for (nlohmann::json& k : kernels)
    if (k["mangled"] == mangled) return k;
  kernels.push_back({{"name", Demangle(mangled)}, {"mangled", mangled}});
  return kernels.back();
}

void SetIfPresent(nlohmann::json& k, const char* key, int64_t v) {
  if (v >= 0) k[key] = v;
}

}  // namespace

nlohmann::json ParsePtxasReport(const std::string& log) {
  static const std::regex kEntry(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex kProps(R"(Function properties for (\S+))");
  nlohmann::json kernels = nlohmann::json::array();
  std::string current;  // mangled name of the kernel the following lines describe
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kEntry)) {
      current = m[1];
      KernelNamed(kernels, current)["arch"] = std::string(m[2]);
    } else if (std::regex_search(line, m, kProps)) {
      current = m[1];
      KernelNamed(kernels, current);
    } else if (!current.empty() && line.find("stack frame") != std::string::npos) {
      nlohmann::json& k = KernelNamed(kernels, current);
      SetIfPresent(k, "stack_bytes", Number(line, "bytes stack frame"));
      SetIfPresent(k, "spill_store_bytes", Number(line, "bytes spill stores"));
      SetIfPresent(k, "spill_load_bytes", Number(line, "bytes spill loads"));
    } else if (!current.empty() && line.find("Used ") != std::string::npos) {
      nlohmann::json& k = KernelNamed(kernels, current);
      SetIfPresent(k, "registers", Number(line, "registers"));
      SetIfPresent(k, "barriers", Number(line, "barriers"));
      SetIfPresent(k, "smem_bytes", Number(line, "bytes smem"));
      SetIfPresent(k, "cmem_bytes", Number(line, "bytes cmem"));
    }
  }
  bool spills = false;
  for (const nlohmann::json& k : kernels)
    spills |= k.value("spill_store_bytes", 0) > 0 || k.value("spill_load_bytes", 0) > 0;
  return {{"kernels", kernels}, {"spills", spills}};
}

std::string StripPtxasReport(const std::string& log) {
  std::istringstream in(log);
  std::string line, out;
  while (std::getline(in, line)) {
    bool report = line.rfind("ptxas info", 0) == 0 ||
                  line.find("bytes stack frame") != std::string::npos;
    if (!report) out += line + "\n";
  }
  return out;
}

}  // namespace kforge
