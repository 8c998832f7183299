#include "backend/registry.h"

#include "backend/cpp/cpp_device.h"
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

}  // namespace

const std::vector<BackendInfo>& Backends() {
  static const std::vector<BackendInfo> kBackends = {
      {"cpp", "C++ on the host CPU (g++, OpenMP)", "kf_run", "kforge_cpu.h",
       {}, {}, false, "", HostRules(), OpenCpp, ListCpp},
      {"opencl", "OpenCL C kernels with a C++ host launcher (any OpenCL 1.2 device)",
       "kf_cl_run", "kforge_opencl.h", {"-DCL_TARGET_OPENCL_VERSION=120"}, {"-lOpenCL"},
       true, ".cl", OpenClRules(), NewOpenClDevice, ListOpenClDevices},
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
