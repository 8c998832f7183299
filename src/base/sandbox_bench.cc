// Prints what each isolation mechanism costs at start: the mean wall time of Run() for a
// program that does nothing (`true`), with mechanisms switched on one after the other.
// Usage: kforge_sandbox_bench [runs]   (default 100)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/subprocess.h"

namespace {

struct Config {
  const char* name;
  bool network, processes, filesystem, seccomp;
};

double MeanMs(kforge::ProcessRunner& runner, const kforge::ProcessSpec& spec, int runs) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) {
    kforge::ProcessResult r = runner.Run(spec);
    if (!r.Succeeded()) {
      std::fprintf(stderr, "run failed: %s\n", r.Describe().c_str());
      std::exit(1);
    }
  }
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(end - start).count() / runs;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 100;
  std::string pattern = (std::filesystem::temp_directory_path() / "kforge-bench-XXXXXX").string();
  const std::filesystem::path dir = mkdtemp(pattern.data());
  std::unique_ptr<kforge::ProcessRunner> runner = kforge::NewSandboxRunner();
  const std::vector<Config> configs = {
      {"rlimits, group, user only", false, false, false, false},
      {"+ network namespace", true, false, false, false},
      {"+ PID/IPC namespace, init", true, true, false, false},
      {"+ private filesystem", true, true, true, false},
      {"+ seccomp (all, default)", true, true, true, true},
  };
  std::printf("%d runs of `true` each, euid %d\n", runs, static_cast<int>(geteuid()));
  double first = 0;
  for (const Config& c : configs) {
    kforge::ProcessSpec spec;
    spec.argv = {"true"};
    spec.cwd = dir;
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.limits.isolate_network = c.network;
    spec.limits.isolate_processes = c.processes;
    spec.limits.private_filesystem = c.filesystem;
    spec.limits.seccomp = c.seccomp;
    MeanMs(*runner, spec, 3);  // warm up (seccomp program, page cache)
    const double ms = MeanMs(*runner, spec, runs);
    if (first == 0) first = ms;
    std::printf("  %-28s %7.2f ms per run  (+%.2f ms)\n", c.name, ms, ms - first);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
