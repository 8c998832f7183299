// The list of backends: one spec per backend, each declared in its folder and listed in one
// explicit table (backends.inc; no self-registration).
//
// The orchestrator reads these specs (how to compile a candidate, what its source may not do,
// how its files and code blocks are named); the devices are kforge-worker's alone
// (backend/devices.h), so no vendor driver is ever loaded into the orchestrator.
// Thread-safety: the table is immutable.
#ifndef KFORGE_BACKEND_REGISTRY_H_
#define KFORGE_BACKEND_REGISTRY_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/status.h"

namespace kforge {

class ProcessRunner;

// A source pattern a candidate may not contain (checked after comments are stripped).
struct DenyRule {
  const char* pattern;  // ECMAScript regular expression
  const char* reason;   // shown in the verdict
};

// A tool that wraps one run of a candidate's worker job for a report beside the verdict
// (`--profile`, `--sanitize`): advisory, it never changes a verdict (docs/profiling.md).
struct AdvisoryTool {
  // The argv that goes before kforge-worker's for one run in `mode` (a sanitizer's tool:
  // "memcheck", "racecheck"; "" for a profiler), or why it cannot run (not installed: how to
  // get it). nullptr: the backend has no such tool.
  Result<std::vector<std::string>> (*wrapper)(ProcessRunner& runner, const std::string& mode) = nullptr;
  // The wrapped run's output (stdout and stderr) and its job folder (where a tool such as
  // rocprof writes its files), read before the folder is removed, as the verdict's field.
  nlohmann::json (*read)(const std::string& mode, const std::string& output, const std::string& job_dir) = nullptr;
};

// A compiler for a device target, run by eval/compiler.cc in the sandbox like g++.
struct Toolchain {
  const char* name = "";  // "nvcc", in messages and the build cache's key
  // The compiler's path, or "" when it is not installed.
  std::string (*find)() = nullptr;
  // The compile log's words when find() gives "": what is missing and how to install it.
  const char* missing = "";
  // The compiler's identity for the build cache's key, from its `--version` output.
  std::string (*version)(const std::string& version_output) = nullptr;
  // The flags of a candidate's build for target `arch`, with the ABI headers in folder
  // include_dir; the spec's compile_flags follow them.
  std::vector<std::string> (*flags)(const std::string& arch, const std::string& include_dir) = nullptr;
};

// What the orchestrator knows of a backend: one spec per backend, declared in the backend's own
// folder (src/backend/<name>/<name>_spec.cc) and listed in src/backend/backends.inc. Nothing
// outside a backend folder branches on a backend's name; it reads these fields. The devices
// themselves are not here: kforge-worker alone links them (backend/devices.h).
struct BackendSpec {
  const char* name = "";      // "cpp", "opencl"
  const char* summary = "";   // one line for `kforge doctor`
  const char* entry = "";     // the candidate's exported function (Python: its function)
  const char* abi_header = "";  // in include/kforge/abi/ ("" for Python-hosted backends)
  std::vector<std::string> compile_flags;  // beyond the common C++ flags
  std::vector<std::string> link_flags;
  // A kernel source beside the host file (OpenCL's <stem>.cl), passed to the device at run time.
  bool sibling_program_source = false;
  const char* sibling_extension = "";
  std::vector<DenyRule> deny;
  const char* source_name = "candidate.cc";  // the file name the compiler sees
  // The compiler of a device target (cuda: nvcc; hip: hipcc), which builds candidates in place
  // of kforge's g++; unset (find == nullptr): g++ with kforge's C++ flags and compile_flags.
  Toolchain toolchain;
  // The toolchain builds for the evaluating device's own architecture, which the orchestrator
  // learns from the worker's probe (eval/compiler.h BuildArch).
  bool per_device_arch = false;
  // per_device_arch: the target built for when no device can be asked ("sm_90", "gfx90a"), and
  // the environment variable that overrides it (KFORGE_CUDA_ARCH, KFORGE_HIP_ARCH).
  const char* default_arch = "sm_90";
  const char* arch_env = "KFORGE_CUDA_ARCH";
  // Parses the compiler's log into the verdict's `resources` (nullptr: none).
  nlohmann::json (*compile_report)(const std::string& log) = nullptr;
  // The worker needs an unlimited address space (CUDA reserves terabytes of virtual memory).
  bool unlimited_address_space = false;
  // > 0: a host median above 1.5 x the device median + this many ms is "suspicious" (work that
  // escaped the device timer); 0: only a warning (when the device is the host itself).
  double host_gap_suspicious_ms = 0;
  // Candidates are Python modules run by the Python worker (python/kforge_pyworker.py), not
  // shared libraries run by kforge-worker. Any backend also takes a .py candidate (a KernelBench
  // ModelNew), judged through the Python worker.
  bool python_hosted = false;
  bool wants_gpu = false;  // Python jobs run on CUDA when there is a device
  // A Python module the backend needs in the worker's interpreter ("triton"): `kforge doctor`
  // and the judge say how to get it when it does not import. The probe imports it only for
  // this backend's judgements (ProbePython), so a module that is slow to import costs no one else.
  const char* python_module = "";
  // How to get python_module when it does not import (the doctor's and the judge's words
  // after "does not import"); "" says scripts/setup installs it.
  const char* python_module_install = "";
  // Candidates run only on an NVIDIA GPU (a DSL without a CPU mode, unlike Triton's
  // interpreter): without a CUDA device the judge and the doctor say so instead of trying.
  bool gpu_required = false;
  // A Python DSL's kernels, for kernel accounting (eval/kernels.h): the decorators that make the
  // function defined after them a device kernel ("triton.jit", "@jit"), and what the DSL puts
  // before that function's name in the kernel it launches (CuTe DSL: "kernel_cutlass_"). Any
  // Python candidate may use any DSL (a KernelBench ModelNew with Triton kernels), so every
  // spec's markers apply to every Python source.
  std::vector<std::string> kernel_decorators;
  const char* kernel_name_prefix = "";
  // The exceptions a Python DSL raises when a kernel does not compile at its first call, as
  // "<module prefix>:<class name>" ("triton:CompilationError"): the Python child reports them as
  // the candidate's compile error (stage kernel_compile), not as a run's failure. Every spec's
  // apply to every Python candidate, as kernel_decorators do.
  std::vector<std::string> first_call_compile_errors;
  // The device may be the host CPU (cpp; OpenCL on PoCL): builds running beside a timed run
  // would slow it, so the compile farm (eval/compile_farm.h) finishes its builds first.
  bool device_may_be_host = true;
  // The device is always the host CPU: its timing lock is "cpu", shared with every other job
  // timed on the host (backend/registry.h DeviceLockName).
  bool device_is_host_cpu = false;
  // Candidate files: extensions this backend's candidates take, the main file's first (what a
  // generated candidate is named; `kforge bench --candidates` looks for these, then .py).
  std::vector<std::string> extensions = {".cc"};
  // Info-string words of a fenced code block that holds the main file, and the sibling kernel
  // source's (a model's answer: agent/code_extract.h).
  std::vector<std::string> code_languages;
  std::vector<std::string> sibling_code_languages;
  // highlight.js's language for the candidate's source in reports.
  const char* highlight = "cpp";
  // `--profile`: device counters per kernel (cuda: Nsight Compute), as the verdict's `profile`.
  // It runs as root (performance counters usually are root-only).
  AdvisoryTool profiler;
  // `--sanitize`: memory and race checks (cuda: compute-sanitizer), as the verdict's `sanitizer`.
  AdvisoryTool sanitizer;
  // Backends that compile their sibling ahead of time (vulkan: GLSL to SPIR-V,
  // vulkan/vulkan_build.h): the command, run in the compile folder, that compiles sibling file
  // `in` into the header kf_shader.h, and a C++ file compiled and linked with the host file that
  // exports what the header holds. nullptr: the sibling travels to the worker as text (OpenCL).
  std::vector<std::string> (*sibling_compile)(const std::string& in) = nullptr;
  const char* (*sibling_glue)() = nullptr;
  // The worker's environment beyond PATH, LD_LIBRARY_PATH and OMP_NUM_THREADS: variables passed
  // on from kforge's own (a driver's device selection, where its drivers are), and
  // worker_cache_env's, set for a folder of kforge's cache that the sandboxed worker may write
  // (opencl: PoCL's kernel cache; "" worker_cache: none).
  std::vector<std::string> worker_env;
  const char* worker_cache = "";
  std::vector<std::pair<std::string, std::string>> (*worker_cache_env)(const std::string& folder) = nullptr;
};

// Deny rules for Python candidates (ModelNew and Triton modules), inline CUDA sources included.
const std::vector<DenyRule>& PythonRules();
// The fields every Python-hosted backend shares (a module the Python worker loads, the Python
// rules, .py files and ```python blocks); the backend's spec fills in the rest.
BackendSpec PythonHostedSpec(const char* name, const char* summary);

// The info-string words of a C++ code block: the host file's in every native backend. A spec
// puts its own words first ({"cuda", "cu"} + these).
std::vector<std::string> CppCodeLanguages(std::vector<std::string> own_first = {});

// Deny rules every host-side candidate (C++, OpenCL host code, CUDA host code) shares.
std::vector<DenyRule> HostRules();

const std::vector<BackendSpec>& Backends();
// nullptr when there is no backend of that name.
const BackendSpec* FindBackend(const std::string& name);
// "cpp, opencl" for messages.
std::string BackendNames();
// The backend whose candidates take this file extension (".cu"), or nullptr; Python-hosted
// backends are left out (.py is every backend's KernelBench form).
const BackendSpec* BackendForExtension(const std::string& ext);
// Every spec's kernel_decorators and non-empty kernel_name_prefix, in registry order.
std::vector<std::string> KernelDecorators();
std::vector<std::string> KernelNamePrefixes();
std::vector<std::string> FirstCallCompileErrors();
// The language word a fenced block holding this file should carry, from the specs: a
// backend's main-file extension gives its first code language ("kernel.cu" -> "cuda"), a
// sibling's extension its first sibling language ("kernel.comp" -> "glsl"), ".py" "python";
// any other file its extension without the dot ("notes.txt" -> "txt"), "text" without one.
std::string FenceLanguageOf(const std::string& file_name);
// The name of the lock a timed run of this backend holds on device `device` ("cpu" for the
// host, "cuda-0"): two jobs timed on one device never overlap.
std::string DeviceLockName(const BackendSpec& backend, int device);
// The ABI headers of every backend, and the reference's: what a compile copies beside a source.
std::vector<std::string> AbiHeaders();

}  // namespace kforge

#endif  // KFORGE_BACKEND_REGISTRY_H_
