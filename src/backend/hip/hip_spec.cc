// The hip backend: HIP C++ kernels with a host launcher, built by hipcc for the evaluating AMD
// GPU's architecture. Not yet run on an AMD GPU: the host-gap threshold is 0 (a warning only)
// until it is measured.
#include "backend/hip/hip_resource_report.h"
#include "backend/hip/hip_toolchain.h"
#include "backend/hip/rocprof.h"
#include "backend/registry.h"

namespace kforge {

namespace {

// HIP candidates: the host rules, plus the HIP spellings of what CUDA candidates may not do.
std::vector<DenyRule> HipRules() {
  std::vector<DenyRule> r = HostRules();
  r.push_back({R"(\b(hipStreamCreate\w*|hipStreamDestroy|hipStreamPerThread|hipExtStreamCreate\w*)\b)",
               "creates or names its own streams (launch on args->stream)"});
  r.push_back({R"(\b(hipDeviceSynchronize|hipStreamSynchronize|hipEventSynchronize|hipCtxSynchronize|hipStreamQuery)\b)",
               "synchronises the device itself (kforge synchronises after the call)"});
  r.push_back({R"(\b(hipEvent\w+|clock64|clock|wall_clock64|__clock64|__builtin_amdgcn_s_memtime|__builtin_amdgcn_s_memrealtime|__builtin_readcyclecounter|__builtin_readsteadycounter)\b|s_memtime|s_memrealtime)",
               "reads GPU clocks or timers (events, clock64, wall_clock64, s_memtime)"});
  r.push_back({R"(\b(hipDeviceSetLimit|hipDeviceSetCacheConfig|hipDeviceSetSharedMemConfig|hipCtx\w*|hipSetDevice|hipDeviceReset|hipSetDeviceFlags|hipStreamSetAttribute|hipExtStreamCreateWithCUMask)\b)",
               "changes device, context or stream settings"});
  r.push_back({R"(\b(hipMalloc\w*|hipExtMalloc\w*|hipHostMalloc|hipHostAlloc|hipFree\w*|hipMemPool\w*|hipMemCreate|hipMallocManaged)\b)",
               "allocates memory itself (export kf_hip_scratch_bytes and use args->scratch)"});
  r.push_back({R"(\b(rocblas\w*|hipblas\w*|hipblasLt\w*|miopen\w*|rocfft\w*|hipfft\w*|rocsparse\w*|hipsparse\w*|rocsolver\w*|hipsolver\w*|rocrand\w*|hiprand\w*|hipcub::Device\w*|rocprim::\w*|thrust::|ck::tensor_operation)\b)",
               "calls a vendor library instead of its own kernels"});
  r.push_back({R"(\b(hipLaunchHostFunc|hipStreamAddCallback|hipGraph\w*|hipMemcpy|hipMemset|hipMemcpyToSymbol|hipMemcpyHtoD|hipMemcpyDtoH)\s*\()",
               "queues host callbacks or graphs, or issues synchronous copies"});
  r.push_back({R"(\b__(expf|exp10f|logf|log2f|log10f|sinf|cosf|tanf|sincosf|powf|fdividef|frcp_\w+|fsqrt_\w+|frsqrt_rn)\s*\(|\b__ocml_native_\w+|\b__builtin_amdgcn_(rcpf|rsqf|sqrtf|exp2f|logf)\b|fgpu-flush-denormals|funsafe-math|fno-honor)",
               "uses fast-math intrinsics or options (fast-math is policed per problem)"});
  r.push_back({R"(\b(hipModuleLoad\w*|hipModuleLaunch\w*|hipModuleGetFunction|hipExtModuleLaunchKernel|hipGetProcAddress|hiprtc\w*)\b)",
               "loads or launches code through the module API (launch its own kernels with <<<...>>>)"});
  return r;
}

Result<std::vector<std::string>> RocprofHook(ProcessRunner& /*runner*/, const std::string& /*mode*/) {
  const std::string rocprof = FindRocprof();
  if (rocprof.empty())
    return Status::NotFound("rocprof not found (not packaged in Debian 12): install ROCm's rocprofiler from "
                            "repo.radeon.com, or set KFORGE_ROCPROF");
  return RocprofWrapper(rocprof);
}

// rocprof writes its files into the job folder (RocprofWrapper): read them there.
nlohmann::json ReadRocprof(const std::string& /*mode*/, const std::string& /*output*/, const std::string& job_dir) {
  return ParseRocprofFolder(job_dir + "/rocprof");
}

}  // namespace

BackendSpec HipSpec() {
  BackendSpec b;
  b.name = "hip";
  b.summary = "HIP C++ kernels with a host launcher (hipcc, AMD GPUs)";
  b.entry = "kf_hip_run";
  b.abi_header = "kforge_hip.h";
  b.deny = HipRules();
  b.toolchain = {"hipcc", FindHipcc,
                 "hipcc not found (looked at $KFORGE_HIPCC, PATH and /opt/rocm/bin): install it (Debian 12: "
                 "`apt-get install hipcc`; or ROCm from repo.radeon.com) to build hip candidates",
                 HipccVersionLine, HipccFlags};
  b.source_name = "candidate.hip";
  b.device_may_be_host = false;
  b.per_device_arch = true;
  b.default_arch = "gfx90a";
  b.arch_env = "KFORGE_HIP_ARCH";
  b.compile_report = ParseHipResourceReport;
  b.profiler = {RocprofHook, ReadRocprof};
  b.unlimited_address_space = true;
  b.extensions = {".hip"};
  b.code_languages = CppCodeLanguages({"hip"});
  b.worker_env = {"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "KFORGE_HIP_RUNTIME"};
  return b;
}

}  // namespace kforge
