#include "backend/registry.h"

#include "backend/cpp/cpp_device.h"
#include "backend/cuda/cuda_device.h"
#include "backend/cuda/ptxas_report.h"
#include "backend/hip/hip_device.h"
#include "backend/hip/hip_resource_report.h"
#include "backend/opencl/opencl_device.h"

namespace kforge {

namespace {

Result<std::unique_ptr<Device>> OpenCpp(int index) {
  if (index != 0) return Status::NotFound("the cpp backend has one device, 0 (the host CPU)");
  return NewCppDevice();
}

Result<std::vector<std::string>> ListCpp() {
  return std::vector<std::string>{HostCpuFingerprint()["name"].get<std::string>() + " (host)"};
}

// Rules every host-side candidate shares: no threads beyond OpenMP, no processes, no clocks,
// no dynamic loading, no signals, no I/O beyond what the ABI gives.
std::vector<DenyRule> HostRules() {
  return {
      {R"(\bstd::(thread|jthread|async)\b|\bpthread_create\b)", "creates threads (only OpenMP is allowed)"},
      {R"(\b(fork|vfork|clone|execv\w*|execl\w*|system|popen|posix_spawn\w*)\s*\()", "starts processes"},
      {R"(\b(clock_gettime|gettimeofday|rdtsc|__rdtsc|time|clock)\s*\(|std::chrono\b)", "reads clocks or timers"},
      {R"(\b(dlopen|dlsym|mprotect|ptrace|signal|sigaction|setitimer|alarm)\s*\()", "loads code, changes memory protection or handles signals"},
      {R"(\b(fopen|open|creat|socket|connect)\s*\()", "opens files or sockets"},
      {R"(fast-math|ffast-math|optimize\s*\(\s*"Ofast|#\s*pragma\s+GCC\s+optimize)", "changes compiler or math options (fast-math is policed per problem)"},
      {R"(\b(getenv|setenv|putenv)\s*\()", "reads or changes the environment"},
  };
}

std::vector<DenyRule> OpenClRules() {
  std::vector<DenyRule> r = HostRules();
  r.push_back({R"(\bclCreateCommandQueue\w*\b)", "creates its own command queue (use args->queue)"});
  r.push_back({R"(\bclCreateContext\w*\b)", "creates its own context (use args->context)"});
  r.push_back({R"(\bclCreate(SubDevices|UserEvent)\b)", "creates devices or user events"});
  r.push_back({R"(\bclBuildProgram\b|\bclCompileProgram\b|\bclLinkProgram\b)",
               "builds programs itself (use args->kernel so options are recorded)"});
  return r;
}

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

Result<std::vector<std::string>> ListCuda() { return ListCudaDevices(); }

BackendInfo CudaBackend() {
  BackendInfo b{"cuda", "CUDA C++ kernels with a host launcher (nvcc, NVIDIA GPUs)", "kf_cuda_run",
                "kforge_cuda.h", {}, {}, false, "", CudaRules(), NewCudaDevice, ListCuda};
  b.compiler = "nvcc";
  b.source_name = "candidate.cu";
  b.device_may_be_host = false;
  b.per_device_arch = true;
  b.compile_report = ParsePtxasReport;
  b.unlimited_address_space = true;
  // Measured on an H200: host - device is 6-8 us for every honest bundled kernel.
  b.host_gap_suspicious_ms = 0.05;
  return b;
}

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

Result<std::vector<std::string>> ListHip() { return ListHipDevices(); }

// Not yet run on an AMD GPU: the host-gap threshold is 0 (a warning only) until it is measured.
BackendInfo HipBackend() {
  BackendInfo b{"hip", "HIP C++ kernels with a host launcher (hipcc, AMD GPUs)", "kf_hip_run",
                "kforge_hip.h", {}, {}, false, "", HipRules(), NewHipDevice, ListHip};
  b.compiler = "hipcc";
  b.source_name = "candidate.hip";
  b.device_may_be_host = false;
  b.per_device_arch = true;
  b.default_arch = "gfx90a";
  b.arch_env = "KFORGE_HIP_ARCH";
  b.compile_report = ParseHipResourceReport;
  b.profiler = "rocprof";
  b.unlimited_address_space = true;
  return b;
}

BackendInfo PythonBackend(const char* name, const char* summary, bool wants_gpu) {
  BackendInfo b{name, summary, "kf_run", "", {}, {}, false, "", PythonRules(), nullptr, nullptr};
  b.compiler = "python";
  b.source_name = "candidate.py";
  b.unlimited_address_space = true;
  b.python_hosted = true;
  b.wants_gpu = wants_gpu;
  // Python launches cost tens of microseconds each; only a gap far beyond that is suspicious.
  b.host_gap_suspicious_ms = 1.0;
  return b;
}

}  // namespace

const std::vector<DenyRule>& PythonRules() {
  static const std::vector<DenyRule> kRules = [] {
    std::vector<DenyRule> r = {
        {R"(\bimport\s+(threading|multiprocessing|subprocess|socket|ctypes|signal|gc|inspect|importlib|concurrent)\b|\bfrom\s+(threading|multiprocessing|subprocess|socket|ctypes|signal|gc|inspect|importlib|concurrent)\b)",
         "imports a module for threads, processes, sockets, raw memory or introspection"},
        {R"(\bos\.(system|fork|popen|exec\w*|spawn\w*|kill|environ|getenv|putenv)\b|\b__import__\s*\(|(^|[^.\w])(exec|eval)\s*\(|\bsys\.(modules|_getframe|settrace|setprofile)\b)",
         "runs or loads code indirectly, or reads the environment"},
        {R"(\bimport\s+time\b|\bfrom\s+time\b|\btime\.(time|perf_counter|sleep|monotonic)\b)", "reads clocks or sleeps"},
        {R"((^|[^.\w])(open|compile)\s*\()", "opens files or compiles code at run time outside load_inline"},
        {R"(\btorch\.compile\s*\()", "wraps torch.compile (that is the torch.compile baseline, not a kernel)"},
        {R"(torch\.cuda\.(Stream|stream|ExternalStream|set_stream|graph|CUDAGraph)\b|cudaStreamCreate\w*|cudaGraph\w*|cudaLaunchHostFunc)",
         "uses its own streams or graphs (the device timers would miss the work)"},
        {R"(\bcublas\w*|\bcudnn\w*|\bcutlass::|\bcublasLt\w*)", "calls a vendor library instead of its own kernels"},
        {R"(\b__(expf|exp10f|logf|log2f|sinf|cosf|tanf|powf|fdividef)\s*\(|use_fast_math|--use_fast_math|ftz=true)",
         "uses fast-math intrinsics or options (fast-math is policed per problem)"},
    };
    return r;
  }();
  return kRules;
}

const std::vector<BackendInfo>& Backends() {
  static const std::vector<BackendInfo> kBackends = {
      {"cpp", "C++ on the host CPU (g++, OpenMP)", "kf_run", "kforge_cpu.h",
       {}, {}, false, "", HostRules(), OpenCpp, ListCpp},
      {"opencl", "OpenCL C kernels with a C++ host launcher (any OpenCL 1.2 device)",
       "kf_cl_run", "kforge_opencl.h", {"-DCL_TARGET_OPENCL_VERSION=120"}, {"-lOpenCL"},
       true, ".cl", OpenClRules(), NewOpenClDevice, ListOpenClDevices},
      CudaBackend(),
      HipBackend(),
      PythonBackend("triton", "Triton kernels in a Python module (kf_run or a KernelBench ModelNew); "
                    "NVIDIA GPUs, or Triton's interpreter on the CPU", true),
      PythonBackend("pytorch", "KernelBench ModelNew modules: PyTorch with inline CUDA (load_inline) or "
                    "Triton kernels; on a GPU when there is one, else the CPU", true),
  };
  return kBackends;
}

const BackendInfo* FindBackend(const std::string& name) {
  for (const BackendInfo& b : Backends())
    if (name == b.name) return &b;
  return nullptr;
}

std::string BackendNames() {
  std::string s;
  for (const BackendInfo& b : Backends()) s += (s.empty() ? "" : ", ") + std::string(b.name);
  return s;
}

}  // namespace kforge
