#include "backend/registry.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace kforge {

#define KFORGE_BACKEND(spec) BackendSpec spec();
#include "backend/backends.inc"
#undef KFORGE_BACKEND

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

std::vector<std::string> CppCodeLanguages(std::vector<std::string> own_first) {
  for (const char* w : {"cpp", "c++", "cc", "cxx", "c"})
    if (std::find(own_first.begin(), own_first.end(), w) == own_first.end()) own_first.push_back(w);
  return own_first;
}

BackendSpec PythonHostedSpec(const char* name, const char* summary) {
  BackendSpec b;
  b.name = name;
  b.summary = summary;
  b.entry = "kf_run";
  b.deny = PythonRules();
  b.source_name = "candidate.py";
  b.unlimited_address_space = true;
  b.python_hosted = true;
  b.wants_gpu = true;
  // Python launches cost tens of microseconds each; only a gap far beyond that is suspicious.
  b.host_gap_suspicious_ms = 1.0;
  b.extensions = {".py"};
  b.code_languages = {"python", "py", "python3"};
  b.highlight = "python";
  return b;
}

const std::vector<BackendSpec>& Backends() {
  static const std::vector<BackendSpec> kBackends = {
#define KFORGE_BACKEND(spec) spec(),
#include "backend/backends.inc"
#undef KFORGE_BACKEND
  };
  return kBackends;
}

const BackendSpec* FindBackend(const std::string& name) {
  for (const BackendSpec& b : Backends())
    if (name == b.name) return &b;
  return nullptr;
}

std::string BackendNames() {
  std::string s;
  for (const BackendSpec& b : Backends()) s += (s.empty() ? "" : ", ") + std::string(b.name);
  return s;
}

const BackendSpec* BackendForExtension(const std::string& ext) {
  for (const BackendSpec& b : Backends())
    if (!b.python_hosted)
      for (const std::string& e : b.extensions)
        if (e == ext) return &b;
  return nullptr;
}

namespace {

// One list field of every spec, in registry order, without repeats.
std::vector<std::string> EverySpecs(std::vector<std::string> BackendSpec::*field) {
  std::vector<std::string> all;
  for (const BackendSpec& b : Backends())
    for (const std::string& v : b.*field)
      if (std::find(all.begin(), all.end(), v) == all.end()) all.push_back(v);
  return all;
}

}  // namespace

std::vector<std::string> KernelDecorators() { return EverySpecs(&BackendSpec::kernel_decorators); }

std::vector<std::string> KernelNamePrefixes() {
  std::vector<std::string> p;
  for (const BackendSpec& b : Backends())
    if (*b.kernel_name_prefix) p.push_back(b.kernel_name_prefix);
  return p;
}

std::vector<std::string> FirstCallCompileErrors() { return EverySpecs(&BackendSpec::first_call_compile_errors); }

std::string FenceLanguageOf(const std::string& file_name) {
  std::string ext = std::filesystem::path(file_name).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext.empty()) return "text";
  for (const BackendSpec& b : Backends())
    for (const std::string& e : b.extensions)
      if (e == ext && !b.code_languages.empty()) return b.code_languages[0];
  for (const BackendSpec& b : Backends())
    if (ext == b.sibling_extension && !b.sibling_code_languages.empty()) return b.sibling_code_languages[0];
  return ext.substr(1);
}

std::string DeviceLockName(const BackendSpec& backend, int device) {
  return backend.device_is_host_cpu ? "cpu" : std::string(backend.name) + "-" + std::to_string(device);
}

std::vector<std::string> AbiHeaders() {
  std::vector<std::string> h = {"kforge_reference.h"};
  for (const BackendSpec& b : Backends())
    if (*b.abi_header) h.push_back(b.abi_header);
  return h;
}

}  // namespace kforge
