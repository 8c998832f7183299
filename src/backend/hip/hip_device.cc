// HIP as a kforge device, through the runtime API loaded at run time.
//
// One device made current (hipSetDevice, so the candidate's launches land on it), one blocking
// stream created for this worker, two timing events. A launch: event, kf_hip_run, event,
// hipDeviceSynchronize (device-wide: work the candidate queued on another stream is finished
// before outputs are read), host clock around it all. No kernel record (rocprof's tracer is
// not loaded into the worker): StartKernelRecord keeps Device's Unavailable default.
#include "backend/hip/hip_device.h"
#include "backend/devices.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#define KF_HIP_NO_RUNTIME_HEADER
#include "abi/kforge_hip.h"
#include "backend/hip/hip_runtime.h"
#include "backend/host_args.h"

namespace kforge {

namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using RunFn = int (*)(const kf_hip_args*);
using ScratchFn = int64_t (*)(const kf_hip_args*);

// The name, architecture and memory size from hipGetDeviceProperties (ROCm 5 layout).
struct Props {
  std::string name, arch;
  size_t global_mem = 0;
};

Props ReadProps(const hip::Api& api, int index) {
  std::vector<char> buf(hip::kPropBufferBytes, 0);
  Props p;
  if (api.GetDeviceProperties(buf.data(), index) != hip::kSuccess) return p;
  p.name.assign(buf.data() + hip::kPropNameOffset, strnlen(buf.data() + hip::kPropNameOffset, 256));
  const char* gcn = buf.data() + hip::kPropGcnArchNameOffset;
  p.arch = ArchFromGcnArchName(std::string(gcn, strnlen(gcn, 256)));
  std::memcpy(&p.global_mem, buf.data() + hip::kPropTotalGlobalMemOffset, sizeof(size_t));
  return p;
}

class HipDevice : public Device {
 public:
  HipDevice(const hip::Api* api, int index) : api_(*api), index_(index) {}
  ~HipDevice() override;
  Status Init();

  nlohmann::json Fingerprint() override;
  int64_t LastLevelCacheBytes() override { return Attr(hip::kAttrL2CacheBytes); }
  Result<BufferId> Alloc(size_t bytes) override;
  Status Write(BufferId b, const void* src, size_t bytes) override;
  Status Read(BufferId b, void* dst, size_t bytes) override;
  Status Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) override;
  Status FlushCaches() override;
  Status Synchronize() override { return Check(api_.DeviceSynchronize(), "hipDeviceSynchronize"); }
  Status Load(const KernelSpec& spec) override;
  Result<int64_t> ScratchBytes(const LaunchArgs& args) override;
  Result<LaunchTiming> Launch(const LaunchArgs& args) override;
  nlohmann::json PrecisionReport() override;
  Result<Peaks> MeasurePeaks() override;
  Result<TheoreticalPeaks> ComputeTheoreticalPeaks() override;

 private:
  struct HipArgs {
    std::vector<kf_hip_tensor> inputs, outputs;
    std::vector<kf_attr> attrs;
    kf_hip_args args{};
  };
  Status Check(hip::Error e, const char* what) const {
    return e == hip::kSuccess
               ? Status::Ok()
               : Status::Unavailable(std::string(what) + " failed: " + hip::ErrorText(api_, e));
  }
  int Attr(int attribute) const {
    int v = 0;
    api_.DeviceGetAttribute(&v, attribute, index_);
    return v;
  }
  void* Ptr(BufferId b) const { return b < 0 ? nullptr : buffers_[b]; }
  void MakeArgs(const LaunchArgs& a, HipArgs* out);
  Result<double> TimedCopy(void* dst, const void* src, size_t bytes);

  const hip::Api& api_;
  int index_;
  Props props_;
  hip::Stream stream_ = nullptr;
  hip::Event start_ = nullptr, end_ = nullptr;
  std::vector<void*> buffers_;
  void* flush_ = nullptr;
  size_t flush_bytes_ = 0;
  unsigned char flush_value_ = 0;
  int flushes_ = 0;
  RunFn run_ = nullptr;
  ScratchFn scratch_ = nullptr;
  char error_[16384] = {};
};

HipDevice::~HipDevice() {
  // After a device error every call fails; the worker process ends right after anyway.
  for (void* p : buffers_) api_.Free(p);
  if (flush_) api_.Free(flush_);
  if (start_) api_.EventDestroy(start_);
  if (end_) api_.EventDestroy(end_);
  if (stream_) api_.StreamDestroy(stream_);
}

Status HipDevice::Init() {
  KF_RETURN_IF_ERROR(Check(api_.SetDevice(index_), "hipSetDevice"));
  props_ = ReadProps(api_, index_);
  // hipStreamCreate makes a blocking stream: work queued on the null stream by mistake is
  // ordered with it, so the events still bracket it.
  KF_RETURN_IF_ERROR(Check(api_.StreamCreate(&stream_), "hipStreamCreate"));
  KF_RETURN_IF_ERROR(Check(api_.EventCreate(&start_), "hipEventCreate"));
  return Check(api_.EventCreate(&end_), "hipEventCreate");
}

nlohmann::json HipDevice::Fingerprint() {
  int driver = 0, runtime = 0;
  api_.DriverGetVersion(&driver);
  api_.RuntimeGetVersion(&runtime);
  return {
      {"kind", "gpu"},
      {"name", props_.name},
      {"vendor", "AMD"},
      {"arch", props_.arch},
      {"driver", "HIP driver " + std::to_string(driver) + ", runtime " + std::to_string(runtime)},
      {"cu_count", Attr(hip::kAttrComputeUnits)},
      {"warp_size", Attr(hip::kAttrWarpSize)},
      {"clock_mhz", Attr(hip::kAttrClockRateKhz) / 1000},
      {"memory_clock_mhz", Attr(hip::kAttrMemoryClockKhz) / 1000},
      {"memory_bus_bits", Attr(hip::kAttrMemoryBusWidth)},
      {"l2_bytes", Attr(hip::kAttrL2CacheBytes)},
      {"global_mem_bytes", props_.global_mem},
      {"pci_bus", Attr(hip::kAttrPciBusId)},
      {"device_index", index_}};
}

Result<BufferId> HipDevice::Alloc(size_t bytes) {
  void* p = nullptr;
  KF_RETURN_IF_ERROR(Check(api_.Malloc(&p, std::max<size_t>(bytes, 256)), "hipMalloc"));
  buffers_.push_back(p);
  return static_cast<BufferId>(buffers_.size() - 1);
}

Status HipDevice::Write(BufferId b, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  KF_RETURN_IF_ERROR(Synchronize());
  return Check(api_.Memcpy(buffers_[b], src, bytes, hip::kMemcpyHostToDevice),
               "hipMemcpy (to device)");
}

Status HipDevice::Read(BufferId b, void* dst, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  KF_RETURN_IF_ERROR(Synchronize());
  return Check(api_.Memcpy(dst, buffers_[b], bytes, hip::kMemcpyDeviceToHost),
               "hipMemcpy (to host)");
}

Status HipDevice::Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) {
  size_t n = bytes / pattern_bytes;
  if (n == 0) return Status::Ok();
  void* p = buffers_[b];
  switch (pattern_bytes) {
    case 1:
      return Check(api_.MemsetD8Async(p, *static_cast<const unsigned char*>(pattern), n, stream_),
                   "hipMemsetD8Async");
    case 2: {
      uint16_t v;
      std::memcpy(&v, pattern, 2);
      return Check(api_.MemsetD16Async(p, v, n, stream_), "hipMemsetD16Async");
    }
    case 4: {
      int32_t v;
      std::memcpy(&v, pattern, 4);
      return Check(api_.MemsetD32Async(p, v, n, stream_), "hipMemsetD32Async");
    }
    default: {  // 8-byte patterns (float64 NaNs, int64 sentinels): through the host
      std::vector<unsigned char> host(n * pattern_bytes);
      FillPattern(host.data(), pattern, pattern_bytes, host.size());
      return Write(b, host.data(), host.size());
    }
  }
}

// Writing twice the L2 (at least 64 MiB) evicts it; the Infinity Cache of RDNA2/3 and MI300
// (up to 256 MiB, not in the L2 attribute) is covered only up to that size.
Status HipDevice::FlushCaches() {
  if (!flush_) {
    flush_bytes_ = static_cast<size_t>(std::max<int64_t>(2 * LastLevelCacheBytes(), 512 << 20));
    KF_RETURN_IF_ERROR(Check(api_.Malloc(&flush_, flush_bytes_), "hipMalloc (cache flush)"));
  }
  KF_RETURN_IF_ERROR(Check(api_.MemsetD8Async(flush_, ++flush_value_, flush_bytes_, stream_),
                           "hipMemsetD8Async (cache flush)"));
  ++flushes_;
  return Synchronize();
}

Status HipDevice::Load(const KernelSpec& spec) {
  void* lib = dlopen(spec.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Status::InvalidArgument(std::string("cannot load candidate: ") + dlerror());
  run_ = reinterpret_cast<RunFn>(dlsym(lib, spec.entry.c_str()));
  if (!run_)
    return Status::InvalidArgument(
        "candidate exports no function '" + spec.entry +
        "'; declare it KF_EXPORT int kf_hip_run(const kf_hip_args*) (see kforge_hip.h)");
  scratch_ = reinterpret_cast<ScratchFn>(dlsym(lib, "kf_hip_scratch_bytes"));
  return Status::Ok();
}

void HipDevice::MakeArgs(const LaunchArgs& a, HipArgs* out) {
  auto tensor = [this](const LaunchTensor& t) {
    kf_hip_tensor k{};
    FillAbiTensor(t, &k);
    k.data = Ptr(t.buffer);
    return k;
  };
  for (const LaunchTensor& t : a.inputs) out->inputs.push_back(tensor(t));
  for (const LaunchTensor& t : a.outputs) out->outputs.push_back(tensor(t));
  out->attrs = MakeAbiAttrs(a.attrs);
  kf_hip_args& c = out->args;
  c.abi_version = KF_ABI_VERSION;
  c.device = index_;
  c.stream = reinterpret_cast<hipStream_t>(stream_);
  c.n_inputs = static_cast<int32_t>(out->inputs.size());
  c.inputs = out->inputs.data();
  c.n_outputs = static_cast<int32_t>(out->outputs.size());
  c.outputs = out->outputs.data();
  c.n_attrs = static_cast<int32_t>(out->attrs.size());
  c.attrs = out->attrs.data();
  c.scratch = Ptr(a.scratch);
  c.scratch_bytes = a.scratch_bytes;
  c.cu_count = Attr(hip::kAttrComputeUnits);
  c.warp_size = Attr(hip::kAttrWarpSize);
  std::strncpy(c.arch, props_.arch.c_str(), sizeof(c.arch) - 1);
  c.error = error_;
  c.error_capacity = sizeof(error_);
}

Result<int64_t> HipDevice::ScratchBytes(const LaunchArgs& args) {
  if (!scratch_) return int64_t{0};
  HipArgs c;
  MakeArgs(args, &c);
  int64_t n = scratch_(&c.args);
  if (n < 0 || n > (int64_t{64} << 30))
    return Status::InvalidArgument("kf_hip_scratch_bytes returned " + std::to_string(n));
  return n;
}

Result<LaunchTiming> HipDevice::Launch(const LaunchArgs& args) {
  HipArgs c;
  MakeArgs(args, &c);
  error_[0] = '\0';
  KF_RETURN_IF_ERROR(Check(api_.SetDevice(index_), "hipSetDevice"));
  double h0 = NowMs();
  KF_RETURN_IF_ERROR(Check(api_.EventRecord(start_, stream_), "hipEventRecord"));
  int rc = run_ ? run_(&c.args) : 0;  // nothing loaded: a null run (the worker's calibration)
  hip::Error recorded = api_.EventRecord(end_, stream_);
  hip::Error synced = api_.DeviceSynchronize();  // device-wide: side streams finish too
  double h1 = NowMs();
  if (rc != 0)
    return Status::InvalidArgument("kf_hip_run returned " + std::to_string(rc) +
                                   (error_[0] ? std::string(": ") + error_ : std::string()));
  if (synced != hip::kSuccess)
    return Status::Unavailable(
        "the device failed after the launch: " + hip::ErrorText(api_, synced) +
        " (the device state is lost; kforge discards this worker)");
  KF_RETURN_IF_ERROR(Check(recorded, "hipEventRecord"));
  float ms = 0;
  KF_RETURN_IF_ERROR(Check(api_.EventElapsedTime(&ms, start_, end_), "hipEventElapsedTime"));
  return LaunchTiming{ms, h1 - h0};
}

nlohmann::json HipDevice::PrecisionReport() {
  // hipcc flags are fixed by kforge (no -ffast-math, no -fgpu-flush-denormals-to-zero, FP
  // contraction at clang's HIP default, fast); fast intrinsics in the source are policed by
  // the static check and the tolerance.
  return {{"build_options", nlohmann::json::array({"hipcc -O3 (no -ffast-math)"})},
          {"fast_math_options", nlohmann::json::array()},
          {"cache_flushes", flushes_}};
}

Result<double> HipDevice::TimedCopy(void* dst, const void* src, size_t bytes) {
  double best = 1e30;
  for (int r = 0; r < 6; ++r) {
    KF_RETURN_IF_ERROR(Check(api_.EventRecord(start_, stream_), "hipEventRecord"));
    KF_RETURN_IF_ERROR(Check(api_.MemcpyAsync(dst, src, bytes, hip::kMemcpyDeviceToDevice, stream_),
                             "hipMemcpyAsync"));
    KF_RETURN_IF_ERROR(Check(api_.EventRecord(end_, stream_), "hipEventRecord"));
    KF_RETURN_IF_ERROR(Synchronize());
    float ms = 0;
    KF_RETURN_IF_ERROR(Check(api_.EventElapsedTime(&ms, start_, end_), "hipEventElapsedTime"));
    if (r > 0) best = std::min(best, static_cast<double>(ms));  // the first run warms up
  }
  return best;
}

// Bandwidth from a device-to-device copy; no FMA kernel is embedded yet, so the fp32 figure is
// the theoretical bound.
Result<Peaks> HipDevice::MeasurePeaks() {
  Peaks p;
  size_t bytes = static_cast<size_t>(std::max<int64_t>(16 * LastLevelCacheBytes(), 1ll << 30));
  KF_ASSIGN_OR_RETURN(BufferId src, Alloc(bytes));
  KF_ASSIGN_OR_RETURN(BufferId dst, Alloc(bytes));
  unsigned char zero = 0;
  KF_RETURN_IF_ERROR(Fill(src, &zero, 1, bytes));
  KF_RETURN_IF_ERROR(Fill(dst, &zero, 1, bytes));
  KF_ASSIGN_OR_RETURN(double ms, TimedCopy(buffers_[dst], buffers_[src], bytes));
  p.bandwidth_gbs = 2.0 * bytes / (ms * 1e-3) / 1e9;
  KF_ASSIGN_OR_RETURN(TheoreticalPeaks bound, ComputeTheoreticalPeaks());
  for (const ComputeUnit& u : bound.units)
    if (u.precision_bits >= 24) p.fp32_gflops = std::max(p.fp32_gflops, u.gops);
  p.detail = {
      {"bandwidth",
       "best of 5 hipMemcpyAsync device-to-device over 16x L2 (>= 1 GiB), read+write bytes"},
      {"fp32", "theoretical (no HIP peak kernel yet): " + bound.basis.dump()}};
  return p;
}

// kforge has no AMD rate table yet: the generic accelerator bound (per CU and clock above
// every AMD GPU, MI300's matrix cores included) over the runtime's CU count and peak clock.
Result<TheoreticalPeaks> HipDevice::ComputeTheoreticalPeaks() {
  int cus = Attr(hip::kAttrComputeUnits);
  if (cus <= 0)
    return Status::Unavailable("the HIP runtime reports no compute units for device " +
                               std::to_string(index_));
  TheoreticalPeaks p = GenericAcceleratorTheoreticalPeaks(cus, Attr(hip::kAttrClockRateKhz) / 1e3);
  p.basis["arch"] = props_.arch;
  return p;
}

Result<int> DeviceCount(const hip::Api& api) {
  int n = 0;
  hip::Error e = api.GetDeviceCount(&n);
  if (e != hip::kSuccess)
    return Status::Unavailable("hipGetDeviceCount failed: " + hip::ErrorText(api, e));
  if (n == 0)
    return Status::Unavailable(
        "the HIP runtime reports no AMD GPU (check rocminfo and HIP_VISIBLE_DEVICES)");
  return n;
}

}  // namespace

std::string ArchFromGcnArchName(const std::string& gcn_arch_name) {
  return gcn_arch_name.substr(0, gcn_arch_name.find(':'));
}

Result<std::vector<std::string>> ListHipDevices() {
  KF_ASSIGN_OR_RETURN(const hip::Api* api, hip::LoadHipRuntime());
  KF_ASSIGN_OR_RETURN(int n, DeviceCount(*api));
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    Props p = ReadProps(*api, i);
    int cus = 0;
    api->DeviceGetAttribute(&cus, hip::kAttrComputeUnits, i);
    out.push_back(p.name + " (" + (p.arch.empty() ? "gfx?" : p.arch) + ", " + std::to_string(cus) +
                  " CUs, " + std::to_string(p.global_mem >> 30) + " GiB)");
  }
  return out;
}

Result<std::unique_ptr<Device>> NewHipDevice(int index) {
  KF_ASSIGN_OR_RETURN(const hip::Api* api, hip::LoadHipRuntime());
  KF_ASSIGN_OR_RETURN(int n, DeviceCount(*api));
  if (index < 0 || index >= n)
    return Status::NotFound("HIP device " + std::to_string(index) + " does not exist; there are " +
                            std::to_string(n) + " (see `kforge doctor`)");
  auto dev = std::make_unique<HipDevice>(api, index);
  KF_RETURN_IF_ERROR(dev->Init());
  return std::unique_ptr<Device>(std::move(dev));
}

// kforge-worker's factory for the hip backend (backend/devices.inc).
DeviceFactory HipDeviceFactory() { return {"hip", NewHipDevice, ListHipDevices}; }

}  // namespace kforge
