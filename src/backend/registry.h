// The list of backends: one row per backend, in one explicit table (no self-registration).
//
// The orchestrator reads the static fields (how to compile a candidate, what its source may
// not do); only kforge-worker calls open/list_devices, so no vendor driver is ever loaded into
// the orchestrator. Thread-safety: the table is immutable.
#ifndef KFORGE_BACKEND_REGISTRY_H_
#define KFORGE_BACKEND_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"

namespace kforge {

// A source pattern a candidate may not contain (checked after comments are stripped).
struct DenyRule {
  const char* pattern;  // ECMAScript regular expression
  const char* reason;   // shown in the verdict
};

struct BackendInfo {
  const char* name;         // "cpp", "opencl"
  const char* summary;      // one line for `kforge doctor`
  const char* entry;        // the candidate's exported function
  const char* abi_header;   // in include/kforge/abi/
  std::vector<std::string> compile_flags;  // beyond the common C++ flags
  std::vector<std::string> link_flags;
  bool sibling_program_source;  // passes <stem>.cl style sibling files to the device
  const char* sibling_extension;
  std::vector<DenyRule> deny;
  // Worker side.
  Result<std::unique_ptr<Device>> (*open)(int device_index);
  Result<std::vector<std::string>> (*list_devices)();
  // Toolchain: "g++" (flags above plus kforge's C++ flags), "nvcc" or "hipcc" (built for the
  // evaluating device's own architecture, which the orchestrator learns from the worker's probe).
  const char* compiler = "g++";
  const char* source_name = "candidate.cc";  // the file name the compiler sees
  bool per_device_arch = false;
  // per_device_arch: the target built for when no device can be asked ("sm_90", "gfx90a"), and
  // the environment variable that overrides it (KFORGE_CUDA_ARCH, KFORGE_HIP_ARCH).
  const char* default_arch = "sm_90";
  const char* arch_env = "KFORGE_CUDA_ARCH";
  // The profiler `kforge eval --profile` wraps a worker job in: "ncu" or "rocprof" (hip).
  const char* profiler = "ncu";
  // Parses the compiler's log into the verdict's `resources` (nullptr: none).
  nlohmann::json (*compile_report)(const std::string& log) = nullptr;
  // The worker needs an unlimited address space (CUDA reserves terabytes of virtual memory).
  bool unlimited_address_space = false;
  // > 0: a host median above 1.5 x the device median + this many ms is "suspicious" (work that
  // escaped the device timer); 0: only a warning (when the device is the host itself).
  double host_gap_suspicious_ms = 0;
  // Candidates are Python modules run by the Python worker (python/kforge_pyworker.py), not
  // shared libraries run by kforge-worker; open/list_devices are nullptr. Any backend also
  // takes a .py candidate (a KernelBench ModelNew), judged through the Python worker.
  bool python_hosted = false;
  bool wants_gpu = false;  // Python jobs run on CUDA when there is a device
  // The device may be the host CPU (cpp; OpenCL on PoCL): builds running beside a timed run
  // would slow it, so the compile farm (eval/compile_farm.h) finishes its builds first.
  bool device_may_be_host = true;
};

// Deny rules for Python candidates (ModelNew and Triton modules), inline CUDA sources included.
const std::vector<DenyRule>& PythonRules();

const std::vector<BackendInfo>& Backends();
// nullptr when there is no backend of that name.
const BackendInfo* FindBackend(const std::string& name);
// "cpp, opencl" for messages.
std::string BackendNames();

}  // namespace kforge

#endif  // KFORGE_BACKEND_REGISTRY_H_
