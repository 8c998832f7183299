// `kforge problems`: the bundled problems, one line each.
#include <fmt/format.h>

#include "cli/commands.h"
#include "kforge/problem.h"

namespace kforge {

void AddProblemsCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("problems", "List the bundled problems (KFORGE_PROBLEMS adds folders)");
  cmd->callback([exit_code] {
    std::vector<std::filesystem::path> files = ListBundledProblems();
    if (files.empty()) {
      fmt::print(stderr, "no problems found; set KFORGE_PROBLEMS to a folder of problem folders\n");
      *exit_code = kExitUsage;
      return;
    }
    fmt::print("{:<28} {:<26} {:>10} {:>10}  {:<12} {}\n", "problem", "sizes", "MFLOP", "MB", "seeds", "description");
    for (const auto& f : files) {
      Result<Problem> p = LoadProblem(f);
      if (!p.ok()) {
        fmt::print("{:<28} error: {}\n", f.parent_path().filename().string(), p.status().message());
        continue;
      }
      Result<BoundProblem> b = Bind(*p, {}, false);
      std::string sizes, seeds;
      for (const SizeParam& s : p->sizes) sizes += (sizes.empty() ? "" : " ") + s.name + "=" + std::to_string(s.value);
      for (const auto& [backend, path] : p->seeds) seeds += (seeds.empty() ? "" : ",") + backend;
      std::string desc = p->description.substr(0, p->description.find(". ") + 1);
      if (desc.size() > 70) desc = desc.substr(0, 67) + "...";
      fmt::print("{:<28} {:<26} {:>10.1f} {:>10.2f}  {:<12} {}\n", p->name, sizes, b.ok() ? b->flops / 1e6 : 0.0,
                 b.ok() ? b->bytes / 1e6 : 0.0, seeds, desc);
    }
  });
}

}  // namespace kforge
