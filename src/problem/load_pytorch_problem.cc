// PyTorch problems in KernelBench format: checked and described without running Python.
#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "kforge/problem.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

bool Defines(const std::string& source, const std::string& pattern) {
  return std::regex_search(source, std::regex(pattern, std::regex::multiline));
}

}  // namespace

Result<Problem> LoadPyTorchProblem(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    return Status::NotFound(fmt::format("{}: no such file; expected a PyTorch module in KernelBench format", file.string()));
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Status::IoError(fmt::format("{}: cannot read", file.string()));
  const std::string source = text.str();
  std::vector<std::string> missing;
  if (!Defines(source, R"(^class\s+Model\s*[(:])")) missing.push_back("class Model(nn.Module)");
  if (!Defines(source, R"(^def\s+get_inputs\s*\()")) missing.push_back("def get_inputs()");
  if (!Defines(source, R"(^def\s+get_init_inputs\s*\()")) missing.push_back("def get_init_inputs()");
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    return Status::InvalidArgument(fmt::format(
        "{}: not a PyTorch problem in KernelBench format: it lacks {} at the top level (see "
        "docs/pytorch-problems.md)", file.string(), list));
  }
  Problem p;
  p.format = ProblemFormat::kPyTorch;
  p.path = fs::absolute(file, ec).lexically_normal();
  p.dir = p.path.parent_path();
  p.name = p.path.stem().string();
  p.reference_float64 = true;
  // The same rule as the Python worker's module_constants(): `name = <number>` at column 0.
  std::regex constant(R"(^([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*([-+]?[0-9][0-9_.eE+-]*)[ \t]*(#.*)?$)");
  std::istringstream lines(source);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (!std::regex_match(line, m, constant)) continue;
    const std::string name = m[1], value = m[2];
    bool seen = false;
    for (const SizeParam& s : p.sizes) seen |= s.name == name;
    for (const Attribute& a : p.attrs) seen |= a.name == name;
    if (seen) continue;
    try {
      size_t used = 0;
      long long v = std::stoll(value, &used);
      if (used == value.size()) {
        p.sizes.push_back({name, v, v > 0 ? 1 : v, 1, 0});
        continue;
      }
      double d = std::stod(value, &used);
      if (used == value.size()) p.attrs.push_back({name, d, false});
    } catch (const std::exception&) {
      // Not a plain number (an expression): not a constant kforge can override.
    }
  }
  for (SizeParam& s : p.sizes) {
    if (s.value >= 256) s.quick = std::max<int64_t>(1, s.value / 16);
  }
  return p;
}

std::map<std::string, int64_t> QuickSizes(const Problem& problem) {
  std::map<std::string, int64_t> out;
  for (const SizeParam& s : problem.sizes) {
    if (s.quick > 0) out[s.name] = s.quick;
  }
  return out;
}

}  // namespace kforge
