// Finding problems by path or by name along the problem search path (see kforge/problem.h).
#include <toml++/toml.h>
#include "kforge/source_dir.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "fmt/format.h"
#include "kforge/problem.h"

namespace kforge {

namespace {

namespace fs = std::filesystem;

constexpr const char* kListHint =
    "run `kforge problems` to list them, or give the path of a problem.toml or its folder";
// Problem folders may be grouped in subfolders; deeper trees are not searched.
constexpr int kMaxSearchDepth = 4;

struct FoundProblem {
  std::string name;
  fs::path file;
};

fs::path ExecutableDir() {
  std::error_code error;
  fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : exe.parent_path();
}

// The problem's `name`, or "" when the file cannot be parsed or has none. LoadProblem reports
// what is wrong with such a file; listing only needs the name.
std::string ReadProblemName(const fs::path& file) {
  try {
    toml::table table = toml::parse_file(file.string());
    return table["name"].value_or(std::string());
  } catch (const toml::parse_error&) {
    return "";
  }
}

// Every problem.toml under `root` in path order, not looking inside problem folders.
std::vector<fs::path> CollectProblemFiles(const fs::path& root) {
  std::vector<fs::path> files;
  std::error_code error;
  if (!fs::is_directory(root, error)) return files;
  if (fs::is_regular_file(root / "problem.toml", error)) return {root / "problem.toml"};
  auto options = fs::directory_options::skip_permission_denied |
                 fs::directory_options::follow_directory_symlink;
  fs::recursive_directory_iterator it(root, options, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_directory(error)) continue;
    fs::path file = it->path() / "problem.toml";
    if (fs::is_regular_file(file, error)) {
      files.push_back(file);
      it.disable_recursion_pending();
    } else if (it.depth() + 1 >= kMaxSearchDepth) {
      it.disable_recursion_pending();
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// All problems in search-path order, named by their file (else by their folder).
std::vector<FoundProblem> FindAllProblems() {
  std::vector<FoundProblem> found;
  for (const fs::path& root : ProblemSearchPath()) {
    for (fs::path& file : CollectProblemFiles(root)) {
      std::string name = ReadProblemName(file);
      if (name.empty()) name = file.parent_path().filename().string();
      found.push_back({std::move(name), std::move(file)});
    }
  }
  return found;
}

bool LooksLikePath(const std::string& text) {
  return text.find('/') != std::string::npos || text.ends_with(".toml");
}

std::string SearchedFolders() {
  std::string list;
  for (const fs::path& root : ProblemSearchPath()) {
    std::error_code error;
    bool exists = fs::is_directory(root, error);
    list +=
        fmt::format("{}{}{}", list.empty() ? "" : ", ", root.string(), exists ? "" : " (missing)");
  }
  return list;
}

}  // namespace

std::vector<fs::path> ProblemSearchPath() {
  std::vector<fs::path> path;
  auto add = [&path](const fs::path& folder) {
    if (folder.empty()) return;
    fs::path normal = folder.lexically_normal();
    if (std::find(path.begin(), path.end(), normal) == path.end()) path.push_back(normal);
  };
  if (const char* env = std::getenv("KFORGE_PROBLEMS")) {
    std::string_view rest = env;
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      add(fs::path(rest.substr(0, colon)));
      rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
    }
  }
  fs::path exe_dir = ExecutableDir();
  if (!exe_dir.empty()) add(exe_dir / ".." / "share" / "kforge" / "problems");
#ifdef KFORGE_SOURCE_DIR
  add(fs::path(KFORGE_SOURCE_DIR) / "problems");
#endif
  return path;
}

Result<fs::path> FindProblem(const std::string& name_or_path) {
  std::error_code error;
  fs::path given(name_or_path);
  if (fs::is_regular_file(given, error)) return given;
  if (fs::is_directory(given, error) && fs::is_regular_file(given / "problem.toml", error)) {
    return given / "problem.toml";
  }
  if (name_or_path.empty() || LooksLikePath(name_or_path)) {
    return Status::NotFound(fmt::format(
        "no problem file or folder '{}'; expected a problem.toml, a folder holding one, or a "
        "problem name; {}",
        name_or_path, kListHint));
  }
  for (const FoundProblem& found : FindAllProblems()) {
    if (found.name == name_or_path) return found.file;
  }
  return Status::NotFound(fmt::format("no problem named '{}' (looked in {}); {}", name_or_path,
                                      SearchedFolders(), kListHint));
}

std::vector<fs::path> ListBundledProblems() {
  std::vector<FoundProblem> found = FindAllProblems();
  std::vector<FoundProblem> unique;
  for (FoundProblem& problem : found) {
    bool shadowed = std::any_of(unique.begin(), unique.end(), [&](const FoundProblem& seen) {
      return seen.name == problem.name;
    });
    if (!shadowed) unique.push_back(std::move(problem));
  }
  std::stable_sort(unique.begin(), unique.end(),
                   [](const FoundProblem& x, const FoundProblem& y) { return x.name < y.name; });
  std::vector<fs::path> files;
  for (FoundProblem& problem : unique) files.push_back(std::move(problem.file));
  return files;
}

}  // namespace kforge
