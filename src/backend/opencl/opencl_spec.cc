// The opencl backend: OpenCL C kernels (<stem>.cl beside the host file) with a C++ host
// launcher, built by the device's own OpenCL compiler at run time (any OpenCL 1.2 device).
#include "backend/registry.h"

namespace kforge {

namespace {

std::vector<DenyRule> OpenClRules() {
  std::vector<DenyRule> r = HostRules();
  r.push_back({R"(\bclCreateCommandQueue\w*\b)", "creates its own command queue (use args->queue)"});
  r.push_back({R"(\bclCreateContext\w*\b)", "creates its own context (use args->context)"});
  r.push_back({R"(\bclCreate(SubDevices|UserEvent)\b)", "creates devices or user events"});
  r.push_back({R"(\bclBuildProgram\b|\bclCompileProgram\b|\bclLinkProgram\b)",
               "builds programs itself (use args->kernel so options are recorded)"});
  return r;
}

// PoCL keeps the kernels it builds in a folder of kforge's cache, so that a warm run skips its
// LLVM compile (docs/abi-opencl.md).
std::vector<std::pair<std::string, std::string>> PoclCacheEnv(const std::string& folder) {
  return {{"POCL_CACHE_DIR", folder}, {"POCL_KERNEL_CACHE", "1"}};
}

}  // namespace

BackendSpec OpenClSpec() {
  BackendSpec b;
  b.name = "opencl";
  b.summary = "OpenCL C kernels with a C++ host launcher (any OpenCL 1.2 device)";
  b.entry = "kf_cl_run";
  b.abi_header = "kforge_opencl.h";
  b.compile_flags = {"-DCL_TARGET_OPENCL_VERSION=120"};
  b.link_flags = {"-lOpenCL"};
  b.sibling_program_source = true;
  b.sibling_extension = ".cl";
  b.deny = OpenClRules();
  b.extensions = {".cpp", ".cc"};
  b.code_languages = CppCodeLanguages();
  b.sibling_code_languages = {"opencl", "cl", "ocl"};
  b.worker_env = {"OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "POCL_DEVICES", "POCL_MAX_PTHREAD_COUNT"};
  b.worker_cache = "pocl";
  b.worker_cache_env = PoclCacheEnv;
  return b;
}

}  // namespace kforge
