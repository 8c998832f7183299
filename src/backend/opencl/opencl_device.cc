// OpenCL as a kforge device. One context and one in-order profiling queue; a launch is
// bracketed by two markers on that queue and timed from the first marker's end to the second's.
#include "backend/opencl/opencl_device.h"
#include "backend/devices.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>

#include "abi/kforge_opencl.h"
#include "backend/cpp/cache_flush.h"
#include "backend/cpp/cpp_device.h"
#include "backend/host_args.h"

namespace kforge {

namespace {

const char kPeaksSource[] =
#include "backend/opencl/peaks.cl.inc"
    ;

// cl_nv_device_attribute_query: the compute capability of an NVIDIA device.
constexpr cl_device_info kComputeCapabilityMajorNv = 0x4000;
constexpr cl_device_info kComputeCapabilityMinorNv = 0x4001;

// Options that loosen IEEE semantics; recorded and policed per problem.
const char* const kFastMathOptions[] = {"-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations",
                                        "-cl-finite-math-only", "-cl-no-signed-zeros",
                                        "-cl-mad-enable"};

std::string ErrorName(cl_int e) { return "OpenCL error " + std::to_string(e); }

std::string DeviceString(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  clGetDeviceInfo(d, what, 0, nullptr, &n);
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string PlatformString(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  clGetPlatformInfo(p, what, 0, nullptr, &n);
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T DeviceValue(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
  return v;
}

struct DeviceRef {
  cl_platform_id platform;
  cl_device_id device;
  bool gpu;
};

Result<std::vector<DeviceRef>> EnumerateDevices() {
  cl_uint np = 0;
  cl_int e = clGetPlatformIDs(0, nullptr, &np);
  if (e != CL_SUCCESS || np == 0)
    return Status::Unavailable(
        "no OpenCL platform found (" + ErrorName(e) +
        "); install a driver: `apt-get install pocl-opencl-icd` for the CPU, or your GPU "
        "vendor's OpenCL ICD, and check /etc/OpenCL/vendors");
  std::vector<cl_platform_id> ps(np);
  clGetPlatformIDs(np, ps.data(), nullptr);
  std::vector<DeviceRef> gpus, others;
  for (cl_platform_id p : ps) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ds(nd);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr);
    for (cl_device_id d : ds) {
      bool gpu = DeviceValue<cl_device_type>(d, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_GPU;
      (gpu ? gpus : others).push_back({p, d, gpu});
    }
  }
  gpus.insert(gpus.end(), others.begin(), others.end());
  if (gpus.empty()) return Status::Unavailable("OpenCL platforms exist but report no devices");
  return gpus;
}

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using RunFn = int (*)(const kf_cl_args*);
using ScratchFn = int64_t (*)(const kf_cl_args*);

class OpenClDevice : public Device {
 public:
  explicit OpenClDevice(DeviceRef ref) : ref_(ref) {}
  ~OpenClDevice() override;
  Status Init();

  nlohmann::json Fingerprint() override;
  int64_t LastLevelCacheBytes() override;
  Result<BufferId> Alloc(size_t bytes) override;
  Status Write(BufferId b, const void* src, size_t bytes) override;
  Status Read(BufferId b, void* dst, size_t bytes) override;
  Status Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) override;
  Status FlushCaches() override;
  Status Synchronize() override { return Check(clFinish(queue_), "clFinish"); }
  Status Load(const KernelSpec& spec) override;
  Result<int64_t> ScratchBytes(const LaunchArgs& args) override;
  Result<LaunchTiming> Launch(const LaunchArgs& args) override;
  nlohmann::json PrecisionReport() override;
  nlohmann::json LastBuildFailure() override { return build_failure_; }
  Result<Peaks> MeasurePeaks() override;
  Result<TheoreticalPeaks> ComputeTheoreticalPeaks() override;

  // The ABI's kernel() callback lands here.
  cl_kernel GetKernel(const char* source, const char* options, const char* name);

 private:
  struct ClArgs;  // kf_cl_args plus the arrays it points into
  Status Check(cl_int e, const char* what) {
    return e == CL_SUCCESS ? Status::Ok() : Status::Unavailable(std::string(what) + " failed: " + ErrorName(e));
  }
  cl_program BuildProgram(const char* source, const std::string& options);
  void MakeArgs(const LaunchArgs& args, ClArgs* out);
  Result<double> TimeMarkers(cl_event before, cl_event after);
  // Whether a CPU device maps its buffers in place (PoCL's CPU drivers): then the flush evicts
  // their lines from the host's caches as the cpp backend does (cpp/cache_flush.h).
  bool MapsInPlace();
  Status EvictBufferLines(BufferId b);
  Result<double> PeakBandwidth();
  Result<double> PeakFma();

  DeviceRef ref_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::vector<cl_mem> buffers_;
  std::vector<size_t> sizes_;
  std::vector<bool> touched_;  // since the last flush (CppDevice's rule): the lines it evicts
  std::optional<bool> maps_in_place_;
  size_t fill_bytes_ = 0;  // the flush's fill where lines are not evicted, set at the first flush
  cl_mem flush_ = nullptr;
  size_t flush_bytes_ = 0;
  uint32_t flush_value_ = 0;
  RunFn run_ = nullptr;
  ScratchFn scratch_ = nullptr;
  std::string program_source_;
  std::map<std::string, cl_program> programs_;           // key: options + '\0' + source
  std::map<std::pair<cl_program, std::string>, cl_kernel> kernels_;
  std::vector<std::string> build_options_seen_;
  char error_[16384] = {};
  nlohmann::json build_failure_;  // the last failed build of the current (or a failed) Launch
};

struct OpenClDevice::ClArgs {
  std::vector<kf_cl_tensor> inputs, outputs;
  std::vector<kf_attr> attrs;
  kf_cl_args args{};
};

cl_kernel KernelCallback(const kf_cl_args* self, const char* source, const char* options,
                         const char* name) {
  return static_cast<OpenClDevice*>(self->host)->GetKernel(source, options, name);
}

OpenClDevice::~OpenClDevice() {
  for (auto& [key, k] : kernels_) clReleaseKernel(k);
  for (auto& [key, p] : programs_) clReleaseProgram(p);
  for (cl_mem m : buffers_) clReleaseMemObject(m);
  if (flush_) clReleaseMemObject(flush_);
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

Status OpenClDevice::Init() {
  cl_int e = CL_SUCCESS;
  context_ = clCreateContext(nullptr, 1, &ref_.device, nullptr, nullptr, &e);
  KF_RETURN_IF_ERROR(Check(e, "clCreateContext"));
  queue_ = clCreateCommandQueue(context_, ref_.device, CL_QUEUE_PROFILING_ENABLE, &e);
  return Check(e, "clCreateCommandQueue");
}

nlohmann::json OpenClDevice::Fingerprint() {
  nlohmann::json j = {
      {"kind", ref_.gpu ? "gpu" : "opencl-device"},
      {"name", DeviceString(ref_.device, CL_DEVICE_NAME)},
      {"vendor", DeviceString(ref_.device, CL_DEVICE_VENDOR)},
      {"driver", DeviceString(ref_.device, CL_DRIVER_VERSION)},
      {"device_version", DeviceString(ref_.device, CL_DEVICE_VERSION)},
      {"platform", PlatformString(ref_.platform, CL_PLATFORM_NAME) + " " +
                       PlatformString(ref_.platform, CL_PLATFORM_VERSION)},
      {"compute_units", DeviceValue<cl_uint>(ref_.device, CL_DEVICE_MAX_COMPUTE_UNITS)},
      {"clock_mhz", DeviceValue<cl_uint>(ref_.device, CL_DEVICE_MAX_CLOCK_FREQUENCY)},
      {"global_mem_bytes", DeviceValue<cl_ulong>(ref_.device, CL_DEVICE_GLOBAL_MEM_SIZE)},
      {"cache_bytes", DeviceValue<cl_ulong>(ref_.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE)},
  };
  if (!ref_.gpu) {
    j["host"] = HostCpuFingerprint();
    // How FlushCaches empties the caches (docs/evaluation.md, "How kforge's backends apply the gates").
    j["cache_flush"] = LineEvictionAvailable() && MapsInPlace() ? "touched buffers' lines evicted (in-place maps)" : "fill";
  }
  return j;
}

int64_t OpenClDevice::LastLevelCacheBytes() {
  int64_t c = static_cast<int64_t>(DeviceValue<cl_ulong>(ref_.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE));
  if (!ref_.gpu) c = std::max(c, HostLastLevelCacheBytes());  // CPU devices share the host LLC
  return c;
}

Result<BufferId> OpenClDevice::Alloc(size_t bytes) {
  cl_int e = CL_SUCCESS;
  cl_mem m = clCreateBuffer(context_, CL_MEM_READ_WRITE, std::max<size_t>(bytes, 64), nullptr, &e);
  KF_RETURN_IF_ERROR(Check(e, "clCreateBuffer"));
  buffers_.push_back(m);
  sizes_.push_back(std::max<size_t>(bytes, 64));
  touched_.push_back(true);
  return static_cast<BufferId>(buffers_.size() - 1);
}

Status OpenClDevice::Write(BufferId b, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  touched_[b] = true;
  return Check(clEnqueueWriteBuffer(queue_, buffers_[b], CL_TRUE, 0, bytes, src, 0, nullptr, nullptr),
               "clEnqueueWriteBuffer");
}

Status OpenClDevice::Read(BufferId b, void* dst, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  touched_[b] = true;
  return Check(clEnqueueReadBuffer(queue_, buffers_[b], CL_TRUE, 0, bytes, dst, 0, nullptr, nullptr),
               "clEnqueueReadBuffer");
}

Status OpenClDevice::Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) {
  size_t whole = bytes / pattern_bytes * pattern_bytes;
  if (whole == 0) return Status::Ok();
  touched_[b] = true;
  return Check(clEnqueueFillBuffer(queue_, buffers_[b], pattern, pattern_bytes, 0, whole, 0,
                                   nullptr, nullptr),
               "clEnqueueFillBuffer");
}

// A GPU, or a CPU device without in-place maps or clflushopt: a fill of max(2 x the device's
// cache, 2 x the host's LLC for a CPU device, 64 MiB). A CPU device that maps in place: the
// touched buffers' lines evicted and 2 x the private caches filled (cpp/cache_flush.h), unless
// the buffers are so large that the fill is cheaper.
Status OpenClDevice::FlushCaches() {
  cl_int e = CL_SUCCESS;
  if (fill_bytes_ == 0) fill_bytes_ = static_cast<size_t>(std::max<int64_t>(2 * LastLevelCacheBytes(), 64 << 20));
  size_t touched = 0;
  for (size_t b = 0; b < sizes_.size(); ++b) touched += touched_[b] ? sizes_[b] : 0;
  const FlushPlan plan = PlanFlush(touched, !ref_.gpu && LineEvictionAvailable() && MapsInPlace(), fill_bytes_);
  const size_t bytes = plan.overwrite_bytes;
  if (bytes > flush_bytes_) {
    if (flush_) clReleaseMemObject(flush_);
    flush_ = nullptr;
    flush_bytes_ = bytes;
    flush_ = clCreateBuffer(context_, CL_MEM_READ_WRITE, flush_bytes_, nullptr, &e);
    KF_RETURN_IF_ERROR(Check(e, "clCreateBuffer (cache flush)"));
  }
  ++flush_value_;
  e = clEnqueueFillBuffer(queue_, flush_, &flush_value_, sizeof(flush_value_), 0, bytes, 0, nullptr, nullptr);
  KF_RETURN_IF_ERROR(Check(e, "clEnqueueFillBuffer (cache flush)"));
  KF_RETURN_IF_ERROR(Synchronize());
  for (size_t b = 0; b < buffers_.size(); ++b) {
    if (plan.method == FlushMethod::kEvictLines && touched_[b]) KF_RETURN_IF_ERROR(EvictBufferLines(static_cast<BufferId>(b)));
    touched_[b] = false;
  }
  return Status::Ok();
}

// Maps b for reading (no copy where the device maps in place), evicts its lines, unmaps.
Status OpenClDevice::EvictBufferLines(BufferId b) {
  cl_int e = CL_SUCCESS;
  void* p = clEnqueueMapBuffer(queue_, buffers_[b], CL_TRUE, CL_MAP_READ, 0, sizes_[b], 0, nullptr, nullptr, &e);
  KF_RETURN_IF_ERROR(Check(e, "clEnqueueMapBuffer (cache flush)"));
  EvictLines(p, sizes_[b]);
  KF_RETURN_IF_ERROR(Check(clEnqueueUnmapMemObject(queue_, buffers_[b], p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject"));
  return Synchronize();
}

// Probed once: a value written through a mapping is what a read of the buffer returns before
// the unmap only where the mapping is the buffer's own memory. (A read of a mapped region is
// left undefined by OpenCL; it is asked of CPU devices only, whose reads are copies.) Anything
// unexpected answers no: the flush then fills.
bool OpenClDevice::MapsInPlace() {
  if (maps_in_place_) return *maps_in_place_;
  maps_in_place_ = false;
  cl_int e = CL_SUCCESS;
  const uint64_t zero = 0, mark = 0x6b666f7267650001ull;
  cl_mem m = clCreateBuffer(context_, CL_MEM_READ_WRITE, 4096, nullptr, &e);
  if (e != CL_SUCCESS) return false;
  uint64_t seen = 0;
  if (clEnqueueWriteBuffer(queue_, m, CL_TRUE, 0, sizeof zero, &zero, 0, nullptr, nullptr) == CL_SUCCESS) {
    void* p = clEnqueueMapBuffer(queue_, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 4096, 0, nullptr, nullptr, &e);
    if (e == CL_SUCCESS && p) {
      std::memcpy(p, &mark, sizeof mark);
      if (clEnqueueReadBuffer(queue_, m, CL_TRUE, 0, sizeof seen, &seen, 0, nullptr, nullptr) != CL_SUCCESS) seen = 0;
      clEnqueueUnmapMemObject(queue_, m, p, 0, nullptr, nullptr);
      clFinish(queue_);
    }
  }
  clReleaseMemObject(m);
  maps_in_place_ = seen == mark;
  return *maps_in_place_;
}

Status OpenClDevice::Load(const KernelSpec& spec) {
  void* lib = dlopen(spec.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Status::InvalidArgument(std::string("cannot load candidate: ") + dlerror());
  run_ = reinterpret_cast<RunFn>(dlsym(lib, spec.entry.c_str()));
  if (!run_)
    return Status::InvalidArgument("candidate exports no function '" + spec.entry +
                                   "'; declare it extern \"C\" (see kforge_opencl.h)");
  scratch_ = reinterpret_cast<ScratchFn>(dlsym(lib, "kf_cl_scratch_bytes"));
  program_source_ = spec.program_source;
  return Status::Ok();
}

// The driver's build log for `p`, without the NUL that ends it.
std::string BuildLog(cl_program p, cl_device_id device) {
  size_t n = 0;
  clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

// What the orchestrator turns into a compile_error (Device::LastBuildFailure): bounded, since
// it travels in the child's reply (a generated source of megabytes is cut, and then maps only
// where it was cut).
nlohmann::json BuildFailureRecord(cl_int code, const std::string& options, const char* source,
                                  const std::string& log) {
  constexpr size_t kMaxSource = 1 << 20, kMaxLog = 256 << 10;
  return {{"code", code}, {"options", options},
          {"source", std::string(source).substr(0, kMaxSource)}, {"log", log.substr(0, kMaxLog)}};
}

// Builds (source, options); nullptr with error_ and build_failure_ set when it does not build.
cl_program OpenClDevice::BuildProgram(const char* source, const std::string& options) {
  cl_int e = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(context_, 1, &source, nullptr, &e);
  if (e != CL_SUCCESS) {
    std::snprintf(error_, sizeof(error_), "clCreateProgramWithSource failed (%d)", e);
    build_failure_ = BuildFailureRecord(e, options, source, "");
    return nullptr;
  }
  e = clBuildProgram(p, 1, &ref_.device, options.c_str(), nullptr, nullptr);
  if (e == CL_SUCCESS) return p;
  const std::string log = BuildLog(p, ref_.device);
  std::snprintf(error_, sizeof(error_), "OpenCL program build failed (%d):\n%s", e, log.c_str());
  build_failure_ = BuildFailureRecord(e, options, source, log);
  clReleaseProgram(p);
  return nullptr;
}

cl_kernel OpenClDevice::GetKernel(const char* source, const char* options, const char* name) {
  std::string opts = options ? options : "";
  std::string key = opts + '\0' + (source ? source : "");
  auto it = programs_.find(key);
  if (it == programs_.end()) {
    if (!source) {
      std::snprintf(error_, sizeof(error_), "kernel(): source is NULL");
      return nullptr;
    }
    build_options_seen_.push_back(opts);
    cl_program p = BuildProgram(source, opts);
    if (!p) return nullptr;
    it = programs_.emplace(key, p).first;
  }
  auto kkey = std::make_pair(it->second, std::string(name ? name : ""));
  auto kit = kernels_.find(kkey);
  if (kit != kernels_.end()) return kit->second;
  cl_int e = CL_SUCCESS;
  cl_kernel k = clCreateKernel(it->second, kkey.second.c_str(), &e);
  if (e != CL_SUCCESS) {
    std::snprintf(error_, sizeof(error_), "no kernel named '%s' in the program (%d)",
                  kkey.second.c_str(), e);
    return nullptr;
  }
  kernels_.emplace(kkey, k);
  return k;
}

void OpenClDevice::MakeArgs(const LaunchArgs& a, ClArgs* out) {
  auto tensor = [this](const LaunchTensor& t) {
    kf_cl_tensor k{};
    FillAbiTensor(t, &k);
    k.buf = t.buffer < 0 ? nullptr : buffers_[t.buffer];
    if (t.buffer >= 0) touched_[t.buffer] = true;
    return k;
  };
  for (const LaunchTensor& t : a.inputs) out->inputs.push_back(tensor(t));
  for (const LaunchTensor& t : a.outputs) out->outputs.push_back(tensor(t));
  out->attrs = MakeAbiAttrs(a.attrs);
  kf_cl_args& c = out->args;
  c.abi_version = KF_ABI_VERSION;
  c.context = context_;
  c.device = ref_.device;
  c.queue = queue_;
  c.n_inputs = static_cast<int32_t>(out->inputs.size());
  c.inputs = out->inputs.data();
  c.n_outputs = static_cast<int32_t>(out->outputs.size());
  c.outputs = out->outputs.data();
  c.n_attrs = static_cast<int32_t>(out->attrs.size());
  c.attrs = out->attrs.data();
  c.scratch = a.scratch < 0 ? nullptr : buffers_[a.scratch];
  if (a.scratch >= 0) touched_[a.scratch] = true;
  c.scratch_bytes = a.scratch_bytes;
  c.program_source = program_source_.empty() ? nullptr : program_source_.c_str();
  c.kernel = KernelCallback;
  c.error = error_;
  c.error_capacity = sizeof(error_);
  c.host = this;
}

Result<int64_t> OpenClDevice::ScratchBytes(const LaunchArgs& args) {
  if (!scratch_) return int64_t{0};
  ClArgs c;
  MakeArgs(args, &c);
  int64_t n = scratch_(&c.args);
  if (n < 0 || n > (int64_t{64} << 30))
    return Status::InvalidArgument("kf_cl_scratch_bytes returned " + std::to_string(n));
  return n;
}

Result<double> OpenClDevice::TimeMarkers(cl_event before, cl_event after) {
  cl_ulong t0 = 0, t1 = 0;
  cl_int e = clGetEventProfilingInfo(before, CL_PROFILING_COMMAND_END, sizeof(t0), &t0, nullptr);
  if (e == CL_SUCCESS)
    e = clGetEventProfilingInfo(after, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr);
  if (e != CL_SUCCESS || t1 < t0 || t0 == 0)
    return Status::Unavailable("marker profiling unavailable");
  return (t1 - t0) * 1e-6;
}

Result<LaunchTiming> OpenClDevice::Launch(const LaunchArgs& args) {
  ClArgs c;
  MakeArgs(args, &c);
  error_[0] = '\0';
  build_failure_ = nullptr;
  cl_event before = nullptr, after = nullptr;
  double h0 = NowMs();
  KF_RETURN_IF_ERROR(Check(clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &before), "marker"));
  int rc = run_ ? run_(&c.args) : 0;  // nothing loaded: a null run (the worker's calibration)
  cl_int e = clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &after);
  cl_int f = clFinish(queue_);
  double h1 = NowMs();
  Result<double> device_ms = Status::Unavailable("no markers");
  if (e == CL_SUCCESS && f == CL_SUCCESS) device_ms = TimeMarkers(before, after);
  clReleaseEvent(before);
  if (after) clReleaseEvent(after);
  if (rc == 0) build_failure_ = nullptr;  // the candidate got past it (another build, say)
  if (rc != 0)
    return Status::InvalidArgument("kf_cl_run returned " + std::to_string(rc) +
                                   (error_[0] ? std::string(": ") + error_ : std::string()));
  if (f != CL_SUCCESS) return Status::Unavailable("the queue failed after the launch: " + ErrorName(f));
  LaunchTiming t{device_ms.ok() ? *device_ms : h1 - h0, h1 - h0};
  return t;
}

nlohmann::json OpenClDevice::PrecisionReport() {
  nlohmann::json fast = nlohmann::json::array();
  for (const std::string& o : build_options_seen_)
    for (const char* f : kFastMathOptions)
      if (o.find(f) != std::string::npos) fast.push_back(f);
  return {{"build_options", build_options_seen_}, {"fast_math_options", fast}};
}

Result<double> OpenClDevice::PeakBandwidth() {
  size_t bytes = static_cast<size_t>(std::max<int64_t>(8 * LastLevelCacheBytes(), 256 << 20));
  KF_ASSIGN_OR_RETURN(BufferId src, Alloc(bytes));
  KF_ASSIGN_OR_RETURN(BufferId dst, Alloc(bytes));
  float zero = 0;
  KF_RETURN_IF_ERROR(Fill(src, &zero, 4, bytes));
  KF_RETURN_IF_ERROR(Fill(dst, &zero, 4, bytes));
  cl_kernel k = GetKernel(kPeaksSource, "", "kf_copy");
  if (!k) return Status::Unavailable(std::string("peaks kernel: ") + error_);
  cl_ulong n = bytes / 16;
  clSetKernelArg(k, 0, sizeof(cl_mem), &buffers_[src]);
  clSetKernelArg(k, 1, sizeof(cl_mem), &buffers_[dst]);
  clSetKernelArg(k, 2, sizeof(n), &n);
  size_t global = (n + 255) / 256 * 256;
  double best = 0;
  for (int rep = 0; rep < 6; ++rep) {
    cl_event ev = nullptr;
    KF_RETURN_IF_ERROR(Check(clEnqueueNDRangeKernel(queue_, k, 1, nullptr, &global, nullptr, 0, nullptr, &ev), "copy"));
    clWaitForEvents(1, &ev);
    cl_ulong t0 = 0, t1 = 0;
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, nullptr);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr);
    clReleaseEvent(ev);
    if (rep > 0 && t1 > t0) best = std::max(best, 2.0 * bytes / ((t1 - t0) * 1e-9) / 1e9);
  }
  // Read-only stream: interleaved for GPUs (coalesced, chunk 1 per pass) and contiguous
  // chunks for CPU devices.
  size_t cu = DeviceValue<cl_uint>(ref_.device, CL_DEVICE_MAX_COMPUTE_UNITS);
  size_t readers = ref_.gpu ? n : cu * 64;
  cl_ulong chunk = ref_.gpu ? 1 : (n + readers - 1) / readers;
  KF_ASSIGN_OR_RETURN(BufferId sums, Alloc(readers * sizeof(float)));
  cl_kernel r = GetKernel(kPeaksSource, "", "kf_read");
  if (!r) return Status::Unavailable(std::string("peaks kernel: ") + error_);
  clSetKernelArg(r, 0, sizeof(cl_mem), &buffers_[src]);
  clSetKernelArg(r, 1, sizeof(cl_mem), &buffers_[sums]);
  clSetKernelArg(r, 2, sizeof(n), &n);
  clSetKernelArg(r, 3, sizeof(chunk), &chunk);
  size_t rglobal = ref_.gpu ? (readers + 255) / 256 * 256 : readers;
  for (int rep = 0; rep < 6; ++rep) {
    cl_event ev = nullptr;
    KF_RETURN_IF_ERROR(Check(clEnqueueNDRangeKernel(queue_, r, 1, nullptr, &rglobal, nullptr, 0, nullptr, &ev), "read"));
    clWaitForEvents(1, &ev);
    cl_ulong t0 = 0, t1 = 0;
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, nullptr);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr);
    clReleaseEvent(ev);
    if (rep > 0 && t1 > t0) best = std::max(best, 1.0 * bytes / ((t1 - t0) * 1e-9) / 1e9);
  }
  return best;
}

Result<double> OpenClDevice::PeakFma() {
  size_t cu = DeviceValue<cl_uint>(ref_.device, CL_DEVICE_MAX_COMPUTE_UNITS);
  size_t global = ref_.gpu ? cu * 4096 : cu * 64;
  int iters = ref_.gpu ? 4096 : 2048;
  KF_ASSIGN_OR_RETURN(BufferId out, Alloc(global * sizeof(float)));
  cl_kernel k = GetKernel(kPeaksSource, "", "kf_fma");
  if (!k) return Status::Unavailable(std::string("peaks kernel: ") + error_);
  float a = 0.999999f, b = 1e-7f;
  clSetKernelArg(k, 0, sizeof(cl_mem), &buffers_[out]);
  clSetKernelArg(k, 1, sizeof(a), &a);
  clSetKernelArg(k, 2, sizeof(b), &b);
  clSetKernelArg(k, 3, sizeof(iters), &iters);
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {
    cl_event ev = nullptr;
    KF_RETURN_IF_ERROR(Check(clEnqueueNDRangeKernel(queue_, k, 1, nullptr, &global, nullptr, 0, nullptr, &ev), "fma"));
    clWaitForEvents(1, &ev);
    cl_ulong t0 = 0, t1 = 0;
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, nullptr);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr);
    clReleaseEvent(ev);
    double flops = 2.0 * 16 * 4 * static_cast<double>(iters) * global;
    if (rep > 0 && t1 > t0) best = std::max(best, flops / ((t1 - t0) * 1e-9) / 1e9);
  }
  return best;
}

Result<Peaks> OpenClDevice::MeasurePeaks() {
  Peaks p;
  KF_ASSIGN_OR_RETURN(p.bandwidth_gbs, PeakBandwidth());
  KF_ASSIGN_OR_RETURN(p.fp32_gflops, PeakFma());
  p.detail = {{"bandwidth", "max of kf_copy (read+write bytes) and kf_read (read bytes) in peaks.cl over 8x the cache, best of 5 runs each"},
              {"fp32", "best of 3 runs of kf_fma (peaks.cl): 16 float4 FMA chains per work-item"}};
  return p;
}

// A CPU device (PoCL and the like) runs on the host's cores, so it gets the host CPU's bound;
// an NVIDIA device its architecture's row (OpenCL has no memory-bus attributes: the ports
// bound); any other device generous per-compute-unit rates.
Result<TheoreticalPeaks> OpenClDevice::ComputeTheoreticalPeaks() {
  if (DeviceValue<cl_device_type>(ref_.device, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU)
    return CpuTheoreticalPeaks(ReadHostCpuFacts());
  int units = static_cast<int>(DeviceValue<cl_uint>(ref_.device, CL_DEVICE_MAX_COMPUTE_UNITS));
  double mhz = DeviceValue<cl_uint>(ref_.device, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  TheoreticalPeaks p;
  if (DeviceString(ref_.device, CL_DEVICE_EXTENSIONS).find("cl_nv_device_attribute_query") != std::string::npos) {
    NvidiaGpuFacts f;
    f.cc_major = static_cast<int>(DeviceValue<cl_uint>(ref_.device, kComputeCapabilityMajorNv));
    f.cc_minor = static_cast<int>(DeviceValue<cl_uint>(ref_.device, kComputeCapabilityMinorNv));
    f.sm_count = units;
    f.clock_mhz = mhz;
    p = NvidiaTheoreticalPeaks(f);
  } else {
    p = GenericAcceleratorTheoreticalPeaks(units, mhz);
  }
  p.basis["native_vector_width_float"] = DeviceValue<cl_uint>(ref_.device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
  return p;
}

}  // namespace

Result<std::vector<std::string>> ListOpenClDevices() {
  KF_ASSIGN_OR_RETURN(std::vector<DeviceRef> refs, EnumerateDevices());
  std::vector<std::string> out;
  for (const DeviceRef& r : refs)
    out.push_back(PlatformString(r.platform, CL_PLATFORM_NAME) + " / " +
                  DeviceString(r.device, CL_DEVICE_NAME) + (r.gpu ? " (gpu)" : " (cpu/other)"));
  return out;
}

Result<std::unique_ptr<Device>> NewOpenClDevice(int index) {
  KF_ASSIGN_OR_RETURN(std::vector<DeviceRef> refs, EnumerateDevices());
  if (index < 0 || index >= static_cast<int>(refs.size()))
    return Status::NotFound("OpenCL device " + std::to_string(index) + " does not exist; there are " +
                            std::to_string(refs.size()) + " (see `kforge doctor`)");
  auto dev = std::make_unique<OpenClDevice>(refs[index]);
  KF_RETURN_IF_ERROR(dev->Init());
  return std::unique_ptr<Device>(std::move(dev));
}

// kforge-worker's factory for the opencl backend (backend/devices.inc).
DeviceFactory OpenClDeviceFactory() { return {"opencl", NewOpenClDevice, ListOpenClDevices}; }

}  // namespace kforge
