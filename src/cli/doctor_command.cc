// `kforge doctor`: what works here, and for what does not, why and how to fix it.
#include <fmt/format.h>

#include "agent/profile_images.h"
#include "backend/registry.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "cli/commands.h"
#include "eval/python_worker.h"
#include "eval/compiler.h"
#include "eval/roofline.h"
#include "eval/trusted_state.h"
#include "eval/worker_client.h"
#include "kforge/eval.h"
#include "kforge/problem.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

// Python-hosted backends: what the Python worker's interpreter has.
bool CheckPythonBackend(const BackendSpec& b, ProcessRunner& runner) {
  bool kept = false;
  Result<nlohmann::json> probe = ProbePython(runner, b.python_module, &kept);
  std::string why = !probe.ok() ? probe.status().message() : PythonBackendUnusable(b, *probe);
  if (!why.empty()) {
    fmt::print("  {:<8} NOT USABLE: {}\n", b.name, why);
    return false;
  }
  const nlohmann::json& j = *probe;
  fmt::print("  {:<8} ok  ({})\n", b.name, b.summary);
  fmt::print("           python {} ({}), torch {}{}{}{}\n", j.value("python", ""), j.value("executable", ""),
             j.value("torch", ""), j.value("torch_compile", false) ? "" : " (no torch.compile)",
             j.contains("triton") ? ", triton " + j["triton"].get<std::string>() : "",
             kept ? "; kept from an earlier probe, nothing it rests on changed (KFORGE_KEEP_PYTHON_PROBE=0 probes afresh)" : "");
  const std::string module = b.python_module;
  if (!module.empty() && module != "triton" && j[module].is_string())
    fmt::print("           {} {}\n", module, j[module].get<std::string>());
  int k = 0;
  for (const auto& d : j.value("devices", nlohmann::json::array())) fmt::print("           device {}: {}\n", k++, d.get<std::string>());
  return true;
}

bool CheckBackend(const BackendSpec& b, ProcessRunner& runner, bool remeasure) {
  if (b.python_hosted) return CheckPythonBackend(b, runner);
  Result<nlohmann::json> probe = ProbeWorker(runner, b.name);
  if (!probe.ok()) {
    fmt::print("  {:<8} NOT USABLE: {}\n", b.name, probe.status().message());
    return false;
  }
  const nlohmann::json& j = *probe;
  if (j.contains("error")) {
    fmt::print("  {:<8} NOT USABLE: {}\n", b.name, j["error"].get<std::string>());
    return false;
  }
  fmt::print("  {:<8} ok  ({})\n", b.name, b.summary);
  int k = 0;
  for (const auto& d : j["devices"]) fmt::print("           device {}: {}\n", k++, d.get<std::string>());
  Result<DevicePeaks> peaks = GetDevicePeaks(b.name, 0, runner, remeasure);
  if (peaks.ok()) {
    fmt::print("           achievable peaks of device 0: {:.1f} GB/s, {:.1f} GFLOP/s fp32 ({})\n", peaks->bandwidth_gbs,
               peaks->fp32_gflops, peaks->cached ? "cached" : "measured now");
    Result<TheoreticalPeaks> bound = TheoreticalPeaksFromJson(peaks->theoretical);
    if (!peaks->theoretical_error.empty()) {
      fmt::print("           theoretical peaks: none ({})\n", peaks->theoretical_error);
    } else if (bound.ok()) {
      FlopCeiling fp32 = FastestUnit(*bound, kStrictFp32Bits);
      fmt::print("           theoretical peaks: {:.1f} GB/s ({}), {:.1f} GFLOP/s for strict fp32 ({} x{})\n",
                 bound->bandwidth_gbs, bound->bandwidth_source, fp32.gflops, fp32.unit, fp32.products);
    }
  } else
    fmt::print("           peaks: {}\n", peaks.status().message());
  return true;
}

}  // namespace

void AddDoctorCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("doctor", "Show which backends, devices and isolation work here");
  auto remeasure = std::make_shared<bool>(false);
  cmd->add_flag("--remeasure-peaks", *remeasure, "Measure device peaks again (do it on an idle machine)");
  cmd->callback([exit_code, remeasure] {
    std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
    fmt::print("kforge 0.1.0\n  worker   {}{}\n", WorkerPath().string(), fs::exists(WorkerPath()) ? "" : "  (MISSING: build kforge-worker)");
    fmt::print("  compiler {}\n", CompilerVersion(*runner));
    Result<fs::path> cache = CacheDir();
    fmt::print("  cache    {}\n", cache.ok() ? cache->string() : cache.status().message());
    fmt::print("  trusted  {}\n", TrustedState(true).Describe());
    fmt::print("  problems {} bundled\n", ListBundledProblems().size());
    // Advisory: without gnuplot a vision model's analyst reads text only (docs/loop.md).
    Result<std::string> gnuplot = ProbeGnuplot(*runner);
    fmt::print("  images   {}\n", gnuplot.ok() ? *gnuplot + ": profile images for vision analysts"
                                                : "NOT AVAILABLE: " + gnuplot.status().message() + "; analysts read text only");
    fmt::print("isolation:\n");
    for (const std::string& line : DescribeIsolation()) fmt::print("  {}\n", line);
    fmt::print("backends:\n");
    int usable = 0;
    for (const BackendSpec& b : Backends()) usable += CheckBackend(b, *runner, *remeasure);
    *exit_code = usable > 0 ? kExitOk : kExitEnvironment;
  });
}

}  // namespace kforge
