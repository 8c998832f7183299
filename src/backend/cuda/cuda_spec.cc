// The cuda backend: CUDA C++ kernels with a host launcher, built by nvcc for the evaluating
// GPU's own architecture.
#include "backend/cuda/cuda_tools.h"
#include "backend/cuda/ptxas_report.h"
#include "backend/registry.h"
#include "base/files.h"

namespace kforge {

namespace {

// CUDA candidates: the host rules, plus everything that escapes args->stream or the timer,
// allocates behind kforge's back, calls vendor libraries, or loosens precision.
std::vector<DenyRule> CudaRules() {
  std::vector<DenyRule> r = HostRules();
  r.push_back({R"(\b(cudaStreamCreate\w*|cuStreamCreate\w*|cudaStreamPerThread|cudaStreamLegacy|cudaStreamDestroy)\b)",
               "creates or names its own streams (launch on args->stream)"});
  r.push_back({R"(\b(cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize|cudaThreadSynchronize|cuCtxSynchronize)\b)",
               "synchronises the device itself (kforge synchronises after the call)"});
  r.push_back({R"(\b(cudaEvent\w+|cuEvent\w+|clock64|clock|globaltimer\w*|__nanosleep)\b|%globaltimer|%clock)",
               "reads GPU clocks or timers (events, clock64, %globaltimer)"});
  r.push_back({R"(\b(cudaDeviceSetLimit|cudaDeviceSetCacheConfig|cudaDeviceSetSharedMemConfig|cudaCtx\w*|cuCtx\w*|cudaSetDevice|cudaDeviceReset|cudaStreamSetAttribute|cuStreamSetAttribute|cudaSetDeviceFlags)\b)",
               "changes device, context or stream settings (limits, persisting L2, access windows)"});
  r.push_back({R"(\b(cudaMalloc\w*|cuMemAlloc\w*|cudaHostAlloc|cudaMallocHost|cudaFree\w*|cudaMemPool\w*|cuMemCreate|cudaMallocManaged)\b)",
               "allocates memory itself (export kf_cuda_scratch_bytes and use args->scratch)"});
  r.push_back({R"(\b(cublas\w*|cudnn\w*|cufft\w*|cusparse\w*|cusolver\w*|curand\w*|cutlass|cub::Device\w*|thrust::)\b)",
               "calls a vendor library instead of its own kernels"});
  r.push_back({R"(\b(cudaLaunchHostFunc|cudaStreamAddCallback|cuLaunchHostFunc|cudaGraph\w*|cuGraph\w*|cudaMemcpy|cudaMemset|cudaMemcpyToSymbol)\s*\()",
               "queues host callbacks or graphs, or issues synchronous copies"});
  r.push_back({R"(\b__(expf|exp10f|logf|log2f|log10f|sinf|cosf|tanf|sincosf|powf|fdividef|frcp_\w+|fsqrt_\w+|frsqrt_rn)\s*\(|use_fast_math|prec-div|prec-sqrt|ftz=true)",
               "uses fast-math intrinsics or options (fast-math is policed per problem)"});
  r.push_back({R"(\b(cuModuleLoad\w*|cuLaunchKernel|cuGetProcAddress|cudaGetDriverEntryPoint\w*|nvrtc\w*)\b)",
               "loads or launches code through the driver API (launch its own kernels with <<<...>>>)"});
  return r;
}

Result<std::vector<std::string>> NcuWrapper(ProcessRunner& runner, const std::string& /*mode*/) {
  const std::string ncu = FindCudaTool("ncu");
  if (ncu.empty()) return Status::NotFound("ncu (Nsight Compute) not found: install it or set KFORGE_NCU");
  return NcuCommand(ncu, AvailableNcuMetrics(runner, ncu));
}

nlohmann::json ReadNcu(const std::string& /*mode*/, const std::string& output, const std::string& /*job_dir*/) {
  return ParseNcuCsv(output);
}

nlohmann::json ReadSanitizer(const std::string& tool, const std::string& output, const std::string& /*job_dir*/) {
  return SummarizeSanitizer(tool, output);
}

Result<std::vector<std::string>> SanitizerWrapper(ProcessRunner& /*runner*/, const std::string& tool) {
  const std::string sanitizer = FindCudaTool("compute-sanitizer");
  if (sanitizer.empty())
    return Status::NotFound("compute-sanitizer not found: install the CUDA toolkit or set KFORGE_COMPUTE_SANITIZER");
  return SanitizerCommand(sanitizer, tool);
}

// nvcc for the device's own architecture, with the ptxas resource report (-Xptxas -v) and
// line info for profilers; the CUDA runtime is linked statically (nvcc's default).
std::vector<std::string> NvccFlags(const std::string& arch, const std::string& include_dir) {
  return {"-std=c++20", "-O3", "-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden",
          "-arch=" + arch, "-lineinfo", "-Xptxas", "-v", "-I" + include_dir};
}

// "Cuda compilation tools, release 13.0, V13.0.88; Build cuda_13.0..." from `nvcc --version`.
std::string NvccVersionLine(const std::string& text) {
  std::string kept;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (line.find("release") != std::string::npos || line.rfind("Build", 0) == 0) kept += (kept.empty() ? "" : "; ") + line;
    pos = end == std::string::npos ? text.size() : end + 1;
  }
  return kept;
}

}  // namespace

BackendSpec CudaSpec() {
  BackendSpec b;
  b.name = "cuda";
  b.summary = "CUDA C++ kernels with a host launcher (nvcc, NVIDIA GPUs)";
  b.entry = "kf_cuda_run";
  b.abi_header = "kforge_cuda.h";
  b.deny = CudaRules();
  b.toolchain = {"nvcc", FindNvcc,
                 "nvcc not found (looked at $KFORGE_NVCC, PATH and /usr/local/cuda/bin): install the CUDA "
                 "toolkit, or put its bin/ on PATH, to build cuda candidates",
                 NvccVersionLine, NvccFlags};
  b.worker_env = {"CUDA_VISIBLE_DEVICES", "KFORGE_CUPTI", "KFORGE_NVCC"};  // KFORGE_*: where libcupti is
  b.source_name = "candidate.cu";
  b.device_may_be_host = false;
  b.per_device_arch = true;
  b.compile_report = ParsePtxasReport;
  b.unlimited_address_space = true;
  // Measured on an H200: host - device is 6-8 us for every honest bundled kernel.
  b.host_gap_suspicious_ms = 0.05;
  b.extensions = {".cu"};
  b.code_languages = CppCodeLanguages({"cuda", "cu"});
  b.profiler = {NcuWrapper, ReadNcu};
  b.sanitizer = {SanitizerWrapper, ReadSanitizer};
  return b;
}

}  // namespace kforge
