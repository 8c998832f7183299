// Suites: ordered lists of problem files for `kforge bench`.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "kforge/problem.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

// "12_Gemm_Multiply.py" -> 12; files without a leading number sort after numbered ones.
long LeadingNumber(const fs::path& p) {
  std::string stem = p.filename().string();
  if (stem == "problem.toml") stem = p.parent_path().filename().string();
  size_t i = 0;
  while (i < stem.size() && std::isdigit(static_cast<unsigned char>(stem[i]))) ++i;
  return i == 0 ? 1L << 40 : std::stol(stem.substr(0, i));
}

void SortSuite(std::vector<fs::path>* files) {
  std::sort(files->begin(), files->end(), [](const fs::path& a, const fs::path& b) {
    long na = LeadingNumber(a), nb = LeadingNumber(b);
    return na != nb ? na < nb : a < b;
  });
}

Result<fs::path> KernelBenchLevel(const fs::path& root_arg, int level) {
  fs::path root = root_arg;
  if (root.empty()) {
    const char* env = std::getenv("KFORGE_KERNELBENCH");
    if (!env || !*env)
      return Status::NotFound(
          "KernelBench suites need a copy of KernelBench: pass --kernelbench <dir> or set KFORGE_KERNELBENCH "
          "to the folder holding level1 ... level4 (or a checkout of the KernelBench repository)");
    root = env;
  }
  std::error_code ec;
  for (const fs::path& dir : {root / ("level" + std::to_string(level)), root / "KernelBench" / ("level" + std::to_string(level))}) {
    if (fs::is_directory(dir, ec)) return dir;
  }
  return Status::NotFound(fmt::format("{} has no level{} folder (nor KernelBench/level{}); point --kernelbench at the "
                                      "folder holding level1 ... level4", root.string(), level, level));
}

std::vector<fs::path> PyFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".py") out.push_back(e.path());
  }
  return out;
}

}  // namespace

Result<std::vector<fs::path>> ResolveSuite(const std::string& name, const fs::path& kernelbench_root) {
  std::vector<fs::path> files;
  std::error_code ec;
  static const std::regex level_re("kernelbench-l([1-4])(-gemm)?");
  std::smatch m;
  if (std::regex_match(name, m, level_re)) {
    int level = std::stoi(m[1]);
    bool gemm = m[2].matched;
    if (gemm && level != 2) return Status::InvalidArgument("the -gemm suite is defined for level 2 only (kernelbench-l2-gemm)");
    KF_ASSIGN_OR_RETURN(fs::path dir, KernelBenchLevel(kernelbench_root, level));
    for (const fs::path& f : PyFiles(dir)) {
      const std::string n = f.filename().string();
      if (!gemm || n.find("Gemm") != std::string::npos || n.find("Matmul") != std::string::npos ||
          n.find("BMM") != std::string::npos)
        files.push_back(f);
    }
  } else if (name == "bundled") {
    files = ListBundledProblems();
    return files;
  } else if (fs::is_directory(name, ec)) {
    for (const fs::path& f : PyFiles(name)) files.push_back(f);
    for (fs::recursive_directory_iterator it(name, ec), end; it != end; it.increment(ec)) {
      if (it->is_regular_file() && it->path().filename() == "problem.toml") files.push_back(it->path());
    }
  } else {
    return Status::NotFound(fmt::format(
        "no suite '{}': give a folder of problems, kernelbench-l1, kernelbench-l2, kernelbench-l3, "
        "kernelbench-l2-gemm or bundled", name));
  }
  if (files.empty()) return Status::NotFound(fmt::format("suite '{}' has no problems (*.py or problem.toml)", name));
  SortSuite(&files);
  return files;
}

}  // namespace kforge
