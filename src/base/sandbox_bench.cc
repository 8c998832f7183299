// Prints what each isolation mechanism costs at start: the mean wall time of Run() for a
// program that does nothing (`true`), with mechanisms switched on one after the other.
// Usage: kforge_sandbox_bench [runs] [parent_rss_mb]   (default 100 runs, 0 MB)
// parent_rss_mb touches that much memory first, like a large orchestrator: fork() copies the
// page tables, once per process of the sandbox (outer child, init, target).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/subprocess.h"

namespace {

struct Config {
  const char* name;
  bool network, processes, filesystem, seccomp;
};

double RunMs(kforge::ProcessRunner& runner, const kforge::ProcessSpec& spec) {
  const auto start = std::chrono::steady_clock::now();
  kforge::ProcessResult r = runner.Run(spec);
  const auto end = std::chrono::steady_clock::now();
  if (!r.Succeeded()) {
    std::fprintf(stderr, "run failed: %s\n", r.Describe().c_str());
    std::exit(1);
  }
  return std::chrono::duration<double, std::milli>(end - start).count();
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * (v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 100;
  const size_t rss_mb = argc > 2 ? std::atoi(argv[2]) : 0;
  std::vector<char> ballast(rss_mb << 20);
  std::memset(ballast.data(), 1, ballast.size());
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
  std::vector<kforge::ProcessSpec> specs;
  for (const Config& c : configs) {
    kforge::ProcessSpec spec;
    spec.argv = {"true"};
    spec.cwd = dir;
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.limits.isolate_network = c.network;
    spec.limits.isolate_processes = c.processes;
    spec.limits.private_filesystem = c.filesystem;
    spec.limits.seccomp = c.seccomp;
    RunMs(*runner, spec);  // warm up (seccomp program, page cache)
    specs.push_back(spec);
  }
  // Interleaved, so that every configuration sees the same load from other processes.
  std::vector<std::vector<double>> ms(configs.size());
  for (int i = 0; i < runs; ++i) {
    for (size_t c = 0; c < configs.size(); ++c) ms[c].push_back(RunMs(*runner, specs[c]));
  }
  std::printf("%d runs of `true` per configuration, euid %d, parent RSS +%zu MB\n", runs,
              static_cast<int>(geteuid()), rss_mb);
  std::printf("  %-28s %9s %9s %9s\n", "", "p10 ms", "median ms", "+median");
  const double base = Percentile(ms[0], 0.5);
  for (size_t c = 0; c < configs.size(); ++c) {
    const double median = Percentile(ms[c], 0.5);
    std::printf("  %-28s %9.2f %9.2f %+9.2f\n", configs[c].name, Percentile(ms[c], 0.1), median,
                median - base);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
