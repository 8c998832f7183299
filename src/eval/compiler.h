// Compiling candidates and references into shared libraries, in the sandbox, with a cache
// keyed by a hash of everything that affects the output: source, flags, the ABI headers and
// the compiler's version. Never keyed by a name.
#ifndef KFORGE_EVAL_COMPILER_H_
#define KFORGE_EVAL_COMPILER_H_

#include <filesystem>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "base/subprocess.h"
#include "kforge/status.h"

namespace kforge {

struct CompileOutput {
  bool ok = false;
  std::filesystem::path library;  // in the cache; valid when ok
  std::string log;                // compiler output, trimmed
  std::string key;                // cache key
  bool cached = false;   // built before, by this process or an earlier one
  bool rejected = false;  // the compiler ran to its end and refused the source (not a timeout, a crash)
  double seconds = 0;
  std::vector<std::string> command;
  std::string arch;                          // per-device-arch backends: "sm_90"
  nlohmann::json resources = nlohmann::json::object();  // backend.compile_report of the log
};

enum class CompileKind { kCandidate, kReference };

// Compiles `source` for `backend` (kCandidate) or as a problem reference (kReference, plain
// -O2, no -march=native). A compiler failure is ok=false with the log, not an error Status;
// an error Status means kforge could not run the compiler at all.
// `arch` is the device architecture for backends with per_device_arch ("sm_90"); it is part
// of the flags and so of the cache key. A missing toolchain (no nvcc) is ok=false with a log
// that says what to install.
Result<CompileOutput> Compile(ProcessRunner& runner, const BackendSpec& backend,
                              const std::filesystem::path& source, CompileKind kind,
                              const std::string& arch = "");

// The architecture of `backend`'s device `device` as its compiler names it ("sm_90"), from
// the worker's probe (the orchestrator never loads a driver itself). Cached per process.
// Unavailable with the probe's reason (e.g. no NVIDIA driver) when there is no such device.
Result<std::string> DeviceArch(ProcessRunner& runner, const BackendSpec& backend, int device);

// The architecture a candidate of `backend` is built for: the device's own (DeviceArch); without
// a device to ask (CI, no driver) $KFORGE_CUDA_ARCH or sm_90, with the reason in *guessed, so
// the static and compile gates still run. "" for backends without per-device architectures.
std::string BuildArch(ProcessRunner& runner, const BackendSpec& backend, int device, std::string* guessed);

// The full version text of a backend's toolchain (nvcc: its --version plus the host g++),
// as it enters the cache key. Cached per process.
std::string ToolchainVersion(ProcessRunner& runner, const BackendSpec& backend);

// Folder holding the candidate ABI headers (kforge_cpu.h, ...).
std::filesystem::path AbiIncludeDir();
// "g++ (Debian 12.2.0-14) 12.2.0", cached per process.
std::string CompilerVersion(ProcessRunner& runner);

}  // namespace kforge

#endif  // KFORGE_EVAL_COMPILER_H_
