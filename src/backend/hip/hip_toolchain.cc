#include "backend/hip/hip_toolchain.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace kforge {

std::string FindHipcc() {
  if (const char* env = std::getenv("KFORGE_HIPCC"); env && *env)
    return access(env, X_OK) == 0 ? env : "";
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/opt/rocm/bin";
  std::istringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::filesystem::path p = std::filesystem::path(dir) / "hipcc";
    if (!dir.empty() && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

const std::vector<std::string>& SupportedHipTargets() {
  static const std::vector<std::string> kTargets = {"gfx90a", "gfx1030"};
  return kTargets;
}

std::vector<std::string> HipccFlags(const std::string& arch, const std::string& include_dir) {
  return {"-std=c++20",
          "-O3",
          "-shared",
          "-fPIC",
          "-fvisibility=hidden",
          "--offload-arch=" + arch,
          "-Rpass-analysis=kernel-resource-usage",
          "-I" + include_dir};
}

std::string HipccVersionLine(const std::string& version_output) {
  std::istringstream in(version_output);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.rfind("HIP version", 0) == 0 || line.find("clang version") != std::string::npos)
      kept += (kept.empty() ? "" : "; ") + line;
  }
  return kept;
}

}  // namespace kforge
