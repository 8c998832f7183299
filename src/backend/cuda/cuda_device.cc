// CUDA as a kforge device, through the driver API loaded at run time.
//
// One device, its primary context made current (so the candidate's runtime-API launches and
// kforge's driver calls share a context), one blocking stream created for this worker, two
// timing events. A launch: event, kf_cuda_run, event, cuCtxSynchronize (device-wide: work the
// candidate queued elsewhere is finished before outputs are read), host clock around it all.
// One launch (the worker's first check) may be recorded through CUPTI (cupti.h): which kernels
// ran, on which streams, and which ended after kf_cuda_run had returned.
#include "backend/cuda/cuda_device.h"
#include "backend/devices.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#define KF_CUDA_NO_RUNTIME_HEADER
#include "abi/kforge_cuda.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/cupti.h"
#include "backend/host_args.h"

namespace kforge {

namespace {

// PTX of peaks.cu, or "" when nvcc was not found at build time.
const char kPeaksPtx[] =
#include "backend/cuda/peaks.ptx.inc"
    ;
// PTX of digest.cu, or "" when nvcc was not found at build time.
const char kDigestPtx[] =
#include "backend/cuda/digest.ptx.inc"
    ;
// PTX of queue.cu, or "" when nvcc was not found at build time.
const char kQueuePtx[] =
#include "backend/cuda/queue.ptx.inc"
    ;
// One spin of about a millisecond at H100/H200 clocks, to learn the SM clock (SetQueue).
constexpr long long kQueueCalibrationCycles = 2000000;
// How much of a queued launch's head start its host time leaves out, at most, in head starts
// (Launch): the spin's own spread, and no more.
constexpr double kQueueSlack = 1.25;
// Threads per block of the spin: divides every SM's thread slots (1536, 2048).
constexpr unsigned kSpinBlock = 512;

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using RunFn = int (*)(const kf_cuda_args*);
using ScratchFn = int64_t (*)(const kf_cuda_args*);

class CudaDevice : public Device {
 public:
  CudaDevice(const cu::Api* api, int index) : api_(*api), index_(index) {}
  ~CudaDevice() override;
  Status Init();

  nlohmann::json Fingerprint() override;
  int64_t LastLevelCacheBytes() override { return Attr(cu::kAttrL2CacheBytes); }
  Result<BufferId> Alloc(size_t bytes) override;
  Status Write(BufferId b, const void* src, size_t bytes) override;
  Status Read(BufferId b, void* dst, size_t bytes) override;
  bool PinHostMemory(void* p, size_t bytes) override;
  Status Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) override;
  Result<std::string> Digest(BufferId b, size_t bytes) override;
  Status FlushCaches() override;
  Status Synchronize() override { return Check(api_.CtxSynchronize(), "cuCtxSynchronize"); }
  Status SetQueue(double ms) override;
  Status Spin(long long cycles);
  Status Load(const KernelSpec& spec) override;
  Result<int64_t> ScratchBytes(const LaunchArgs& args) override;
  Result<LaunchTiming> Launch(const LaunchArgs& args) override;
  nlohmann::json PrecisionReport() override;
  Status StartKernelRecord(const std::string& call) override;
  Result<nlohmann::json> StopKernelRecord() override;
  Result<Peaks> MeasurePeaks() override;
  Result<TheoreticalPeaks> ComputeTheoreticalPeaks() override;

 private:
  struct CudaArgs {
    std::vector<kf_cuda_tensor> inputs, outputs;
    std::vector<kf_attr> attrs;
    kf_cuda_args args{};
  };
  Status Check(cu::Result_t e, const char* what) const {
    return e == cu::kSuccess ? Status::Ok()
                             : Status::Unavailable(std::string(what) + " failed: " + cu::ErrorText(api_, e));
  }
  int Attr(int attribute) const {
    int v = 0;
    api_.DeviceGetAttribute(&v, attribute, device_);
    return v;
  }
  void* Ptr(BufferId b) const { return b < 0 ? nullptr : reinterpret_cast<void*>(buffers_[b]); }
  void MakeArgs(const LaunchArgs& a, CudaArgs* out);
  Status ResetPersistingL2();
  Result<double> TimeKernel(cu::Function fn, unsigned grid, unsigned block, void** params, int reps);
  Result<double> PeakBandwidth(cu::Function copy);
  Result<double> PeakFma(cu::Function fma);
  Result<double> PeakMma(cu::Function mma);

  const cu::Api& api_;
  int index_;
  cu::Device device_ = 0;
  cu::Context ctx_ = nullptr;
  cu::Stream stream_ = nullptr;
  cu::Event start_ = nullptr, end_ = nullptr;
  cu::Event head_ = nullptr;  // before a queued launch's head start (Launch: its host time)
  std::vector<cu::DevicePtr> buffers_;
  std::vector<void*> pinned_;  // PinHostMemory's ranges, unpinned before the context goes
  cu::DevicePtr flush_ = 0;
  size_t flush_bytes_ = 0;
  unsigned char flush_value_ = 0;
  int flushes_ = 0, l2_resets_ = 0;
  RunFn run_ = nullptr;
  ScratchFn scratch_ = nullptr;
  cu::Function digest_ = nullptr;  // kf_digest, loaded on first use
  bool digest_tried_ = false;
  BufferId digest_sums_ = -1;
  cu::Function spin_ = nullptr;  // kf_spin (queue.cu), loaded by SetQueue
  unsigned spin_blocks_ = 0;     // its grid: every thread slot of every SM (SetQueue)
  long long queue_cycles_ = 0;   // the head start in SM cycles; 0: none
  double queue_ms_ = 0;
  std::string queue_note_;       // why there is none, when one was asked for
  char error_[16384] = {};
  std::unique_ptr<cupti::KernelRecorder> recorder_;  // armed for one launch, else null
};

CudaDevice::~CudaDevice() {
  // After a device error every call fails; the worker process ends right after anyway.
  for (cu::DevicePtr p : buffers_) api_.MemFree(p);
  for (void* p : pinned_) api_.MemHostUnregister(p);
  if (flush_) api_.MemFree(flush_);
  if (start_) api_.EventDestroy(start_);
  if (end_) api_.EventDestroy(end_);
  if (head_) api_.EventDestroy(head_);
  if (stream_) api_.StreamDestroy(stream_);
  if (ctx_) api_.DevicePrimaryCtxRelease(device_);
}

Status CudaDevice::Init() {
  KF_RETURN_IF_ERROR(Check(api_.DeviceGet(&device_, index_), "cuDeviceGet"));
  KF_RETURN_IF_ERROR(Check(api_.DevicePrimaryCtxRetain(&ctx_, device_), "cuDevicePrimaryCtxRetain"));
  KF_RETURN_IF_ERROR(Check(api_.CtxSetCurrent(ctx_), "cuCtxSetCurrent"));
  // A blocking stream: work a candidate queues on the legacy default stream by mistake is
  // ordered with it, so the events still bracket it.
  KF_RETURN_IF_ERROR(Check(api_.StreamCreate(&stream_, 0), "cuStreamCreate"));
  KF_RETURN_IF_ERROR(Check(api_.EventCreate(&start_, 0), "cuEventCreate"));
  KF_RETURN_IF_ERROR(Check(api_.EventCreate(&head_, 0), "cuEventCreate"));
  return Check(api_.EventCreate(&end_, 0), "cuEventCreate");
}

nlohmann::json CudaDevice::Fingerprint() {
  char name[256] = {};
  api_.DeviceGetName(name, sizeof(name), device_);
  int driver = 0;
  api_.DriverGetVersion(&driver);
  size_t mem = 0;
  api_.DeviceTotalMem(&mem, device_);
  int major = Attr(cu::kAttrComputeMajor), minor = Attr(cu::kAttrComputeMinor);
  nlohmann::json fp = {{"kind", "gpu"},
          {"name", name},
          {"vendor", "NVIDIA"},
          {"arch", "sm_" + std::to_string(major) + std::to_string(minor)},
          {"compute_capability", std::to_string(major) + "." + std::to_string(minor)},
          {"driver", "CUDA driver " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10)},
          {"sm_count", Attr(cu::kAttrSmCount)},
          {"clock_mhz", Attr(cu::kAttrClockRateKhz) / 1000},
          {"memory_clock_mhz", Attr(cu::kAttrMemoryClockKhz) / 1000},
          {"memory_bus_bits", Attr(cu::kAttrMemoryBusWidth)},
          {"l2_bytes", Attr(cu::kAttrL2CacheBytes)},
          {"max_persisting_l2_bytes", Attr(cu::kAttrMaxPersistingL2Bytes)},
          {"global_mem_bytes", mem},
          {"pci_bus", Attr(cu::kAttrPciBusId)},
          {"device_index", index_},
          {"queue_ms", queue_ms_}};
  if (!queue_note_.empty()) fp["queue_note"] = queue_note_;
  return fp;
}

// The spin's cycle count for `ms` comes from one timed spin of kQueueCalibrationCycles.
Status CudaDevice::SetQueue(double ms) {
  queue_cycles_ = 0, queue_ms_ = 0, queue_note_.clear();
  if (ms <= 0) return Status::Ok();
  if (!spin_) {
    cu::Module module = nullptr;
    if (!kQueuePtx[0]) {
      queue_note_ = "this kforge-worker was built without nvcc (no queue.cu PTX): timed launches are not queued";
      return Status::Ok();
    }
    if (api_.ModuleLoadData(&module, kQueuePtx) != cu::kSuccess || api_.ModuleGetFunction(&spin_, module, "kf_spin") != cu::kSuccess) {
      spin_ = nullptr;
      queue_note_ = "the head start's kernel (queue.cu) did not load: timed launches are not queued";
      return Status::Ok();
    }
  }
  KF_RETURN_IF_ERROR(Check(api_.CtxSetCurrent(ctx_), "cuCtxSetCurrent"));
  const unsigned slots = static_cast<unsigned>(std::max(Attr(cu::kAttrMaxThreadsPerSm), static_cast<int>(kSpinBlock)));
  spin_blocks_ = static_cast<unsigned>(std::max(Attr(cu::kAttrSmCount), 1)) * (slots / kSpinBlock);
  float spun = 0;
  for (long long cycles : {1000LL, kQueueCalibrationCycles}) {  // the first loads the kernel
    Status s = Check(api_.EventRecord(start_, stream_), "cuEventRecord");
    if (s.ok()) s = Spin(cycles);
    if (s.ok()) s = Check(api_.EventRecord(end_, stream_), "cuEventRecord");
    if (s.ok()) s = Synchronize();
    if (s.ok()) s = Check(api_.EventElapsedTime(&spun, start_, end_), "cuEventElapsedTime");
    if (!s.ok()) {  // judged without a head start rather than not at all
      queue_note_ = "the head start's calibration spin failed (" + s.message() + "): timed launches are not queued";
      return Status::Ok();
    }
  }
  if (spun <= 0) {
    queue_note_ = "the calibration spin took no time: timed launches are not queued";
    return Status::Ok();
  }
  queue_cycles_ = std::max(1LL, static_cast<long long>(ms * static_cast<double>(kQueueCalibrationCycles) / spun));
  queue_ms_ = ms;
  return Status::Ok();
}

// kf_spin on every thread slot of every SM: a kernel of any other stream (one the candidate
// made) waits behind it instead of running beside it, unseen by the start event and by the
// supervisor's clock.
Status CudaDevice::Spin(long long cycles) {
  void* params[] = {&cycles};
  return Check(api_.LaunchKernel(spin_, spin_blocks_, 1, 1, kSpinBlock, 1, 1, 0, stream_, params, nullptr), "cuLaunchKernel (kf_spin)");
}

Result<BufferId> CudaDevice::Alloc(size_t bytes) {
  cu::DevicePtr p = 0;
  KF_RETURN_IF_ERROR(Check(api_.MemAlloc(&p, std::max<size_t>(bytes, 256)), "cuMemAlloc"));
  buffers_.push_back(p);
  return static_cast<BufferId>(buffers_.size() - 1);
}

Status CudaDevice::Write(BufferId b, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  KF_RETURN_IF_ERROR(Synchronize());
  return Check(api_.MemcpyHtoD(buffers_[b], src, bytes), "cuMemcpyHtoD");
}

Status CudaDevice::Read(BufferId b, void* dst, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  KF_RETURN_IF_ERROR(Synchronize());
  return Check(api_.MemcpyDtoH(dst, buffers_[b], bytes), "cuMemcpyDtoH");
}

// CU_MEMHOSTREGISTER_PORTABLE: pinned for every context. A failure (a limit on locked memory,
// memory the driver cannot pin) leaves the range pageable: reads stay correct, only slower.
bool CudaDevice::PinHostMemory(void* p, size_t bytes) {
  if (p == nullptr || bytes == 0 || api_.MemHostRegister(p, bytes, 0x01) != cu::kSuccess) return false;
  pinned_.push_back(p);
  return true;
}

Status CudaDevice::Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) {
  size_t n = bytes / pattern_bytes;
  if (n == 0) return Status::Ok();
  cu::DevicePtr p = buffers_[b];
  switch (pattern_bytes) {
    case 1: return Check(api_.MemsetD8Async(p, *static_cast<const unsigned char*>(pattern), n, stream_), "cuMemsetD8Async");
    case 2: { uint16_t v; std::memcpy(&v, pattern, 2); return Check(api_.MemsetD16Async(p, v, n, stream_), "cuMemsetD16Async"); }
    case 4: { uint32_t v; std::memcpy(&v, pattern, 4); return Check(api_.MemsetD32Async(p, v, n, stream_), "cuMemsetD32Async"); }
    default: {  // 8-byte patterns (float64 NaNs, int64 sentinels): through the host
      std::vector<unsigned char> host(n * pattern_bytes);
      FillPattern(host.data(), pattern, pattern_bytes, host.size());
      return Write(b, host.data(), host.size());
    }
  }
}

// kf_digest (digest.cu) over the buffer: two 64-bit sums, as device_digest formats them. A build
// without its PTX, or a module that does not load, has no digest: the host hashes.
Result<std::string> CudaDevice::Digest(BufferId b, size_t bytes) {
  if (!digest_tried_) {
    digest_tried_ = true;
    cu::Module module = nullptr;
    if (kDigestPtx[0] && api_.ModuleLoadData(&module, kDigestPtx) == cu::kSuccess &&
        api_.ModuleGetFunction(&digest_, module, "kf_digest") != cu::kSuccess)
      digest_ = nullptr;
    if (digest_) {
      KF_ASSIGN_OR_RETURN(digest_sums_, Alloc(16));
    }
  }
  if (!digest_) return std::string();
  const unsigned char zero = 0;
  KF_RETURN_IF_ERROR(Fill(digest_sums_, &zero, 1, 16));
  cu::DevicePtr data = buffers_[b], sums = buffers_[digest_sums_];
  unsigned long long n = bytes;
  void* params[] = {&data, &n, &sums};
  const unsigned long long words = (n + 3) / 4;
  const unsigned block = 256;
  const unsigned grid = static_cast<unsigned>(std::clamp<unsigned long long>((words + block - 1) / block, 1, std::max(Attr(cu::kAttrSmCount), 1) * 8ull));
  KF_RETURN_IF_ERROR(Check(api_.LaunchKernel(digest_, grid, 1, 1, block, 1, 1, 0, stream_, params, nullptr), "cuLaunchKernel (kf_digest)"));
  unsigned long long out[2] = {0, 0};
  KF_RETURN_IF_ERROR(Read(digest_sums_, out, sizeof out));
  char text[64];
  std::snprintf(text, sizeof text, "d%016llx%016llx%llx", out[0], out[1], n);
  return std::string(text);
}

// Persisting-L2 lines and access-policy windows survive a plain flush (EVALUATION.md 3).
Status CudaDevice::ResetPersistingL2() {
  cu::StreamAttrValue none{};
  none.access_policy_window.num_bytes = 0;
  KF_RETURN_IF_ERROR(Check(api_.StreamSetAttribute(stream_, cu::kStreamAttrAccessPolicyWindow, &none),
                           "cuStreamSetAttribute(access policy window)"));
  if (Attr(cu::kAttrMaxPersistingL2Bytes) <= 0) return Status::Ok();  // no persisting L2 here
  KF_RETURN_IF_ERROR(Check(api_.CtxSetLimit(cu::kLimitPersistingL2CacheSize, 0), "cuCtxSetLimit(persisting L2)"));
  KF_RETURN_IF_ERROR(Check(api_.CtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache"));
  ++l2_resets_;
  return Status::Ok();
}

Status CudaDevice::FlushCaches() {
  if (!flush_) {
    flush_bytes_ = static_cast<size_t>(std::max<int64_t>(2 * LastLevelCacheBytes(), 64 << 20));
    KF_RETURN_IF_ERROR(Check(api_.MemAlloc(&flush_, flush_bytes_), "cuMemAlloc (cache flush)"));
  }
  KF_RETURN_IF_ERROR(ResetPersistingL2());
  KF_RETURN_IF_ERROR(Check(api_.MemsetD8Async(flush_, ++flush_value_, flush_bytes_, stream_), "cuMemsetD8Async (cache flush)"));
  ++flushes_;
  return Synchronize();
}

Status CudaDevice::Load(const KernelSpec& spec) {
  void* lib = dlopen(spec.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Status::InvalidArgument(std::string("cannot load candidate: ") + dlerror());
  run_ = reinterpret_cast<RunFn>(dlsym(lib, spec.entry.c_str()));
  if (!run_)
    return Status::InvalidArgument("candidate exports no function '" + spec.entry +
                                   "'; declare it KF_EXPORT int kf_cuda_run(const kf_cuda_args*) (see kforge_cuda.h)");
  scratch_ = reinterpret_cast<ScratchFn>(dlsym(lib, "kf_cuda_scratch_bytes"));
  return Status::Ok();
}

void CudaDevice::MakeArgs(const LaunchArgs& a, CudaArgs* out) {
  auto tensor = [this](const LaunchTensor& t) {
    kf_cuda_tensor k{};
    FillAbiTensor(t, &k);
    k.data = Ptr(t.buffer);
    return k;
  };
  for (const LaunchTensor& t : a.inputs) out->inputs.push_back(tensor(t));
  for (const LaunchTensor& t : a.outputs) out->outputs.push_back(tensor(t));
  out->attrs = MakeAbiAttrs(a.attrs);
  kf_cuda_args& c = out->args;
  c.abi_version = KF_ABI_VERSION;
  c.device = index_;
  c.stream = reinterpret_cast<cudaStream_t>(stream_);
  c.n_inputs = static_cast<int32_t>(out->inputs.size());
  c.inputs = out->inputs.data();
  c.n_outputs = static_cast<int32_t>(out->outputs.size());
  c.outputs = out->outputs.data();
  c.n_attrs = static_cast<int32_t>(out->attrs.size());
  c.attrs = out->attrs.data();
  c.scratch = Ptr(a.scratch);
  c.scratch_bytes = a.scratch_bytes;
  c.sm_count = Attr(cu::kAttrSmCount);
  c.compute_capability = Attr(cu::kAttrComputeMajor) * 10 + Attr(cu::kAttrComputeMinor);
  c.error = error_;
  c.error_capacity = sizeof(error_);
}

Result<int64_t> CudaDevice::ScratchBytes(const LaunchArgs& args) {
  if (!scratch_) return int64_t{0};
  CudaArgs c;
  MakeArgs(args, &c);
  int64_t n = scratch_(&c.args);
  if (n < 0 || n > (int64_t{64} << 30))
    return Status::InvalidArgument("kf_cuda_scratch_bytes returned " + std::to_string(n));
  return n;
}

Result<LaunchTiming> CudaDevice::Launch(const LaunchArgs& args) {
  CudaArgs c;
  MakeArgs(args, &c);
  error_[0] = '\0';
  KF_RETURN_IF_ERROR(Check(api_.CtxSetCurrent(ctx_), "cuCtxSetCurrent"));
  cupti::KernelRecorder* rec = recorder_ && recorder_->active() ? recorder_.get() : nullptr;
  // The head start goes in before the start event (never in a recorded launch: the record holds
  // the candidate's kernels only).
  const bool queued = args.queued && queue_cycles_ > 0 && !rec;
  const double hq = NowMs();
  if (queued) {
    KF_RETURN_IF_ERROR(Check(api_.EventRecord(head_, stream_), "cuEventRecord"));
    KF_RETURN_IF_ERROR(Spin(queue_cycles_));
  }
  double h0 = NowMs();
  if (rec) rec->MarkStart();
  KF_RETURN_IF_ERROR(Check(api_.EventRecord(start_, stream_), "cuEventRecord"));
  int rc = run_ ? run_(&c.args) : 0;  // nothing loaded: a null run (the worker's calibration)
  if (rec) rec->MarkReturned();
  cu::Result_t recorded = api_.EventRecord(end_, stream_);
  const double enqueued = NowMs();
  cu::Result_t synced = api_.CtxSynchronize();  // device-wide: side streams finish too
  double h1 = NowMs();
  if (rec) rec->MarkSynced();
  if (rc != 0)
    return Status::InvalidArgument("kf_cuda_run returned " + std::to_string(rc) +
                                   (error_[0] ? std::string(": ") + error_ : std::string()));
  if (synced != cu::kSuccess)
    return Status::Unavailable("the device failed after the launch: " + cu::ErrorText(api_, synced) +
                               " (the context is lost; kforge discards this worker)");
  KF_RETURN_IF_ERROR(Check(recorded, "cuEventRecord"));
  float ms = 0;
  KF_RETURN_IF_ERROR(Check(api_.EventElapsedTime(&ms, start_, end_), "cuEventElapsedTime"));
  // The host's time of a queued launch leaves out the head start's own time on the device (the
  // spin, from the event before it to the start event), as if nothing had been queued: with it,
  // every queued call's host time exceeded its device time by the 0.2 ms spin, and the host_time
  // gate called every small kernel's work "escaping the device timer" (H100, 2026-12-07). At most
  // kQueueSlack times the head start is left out: whatever held the start event back longer (a
  // kernel of the candidate's that delayed the spin, or work it queued before the start event)
  // stays in the host time.
  double host = h1 - h0;
  if (queued) {
    float spun = 0;
    KF_RETURN_IF_ERROR(Check(api_.EventElapsedTime(&spun, head_, start_), "cuEventElapsedTime"));
    host = std::max(0.0, h1 - hq - std::min<double>(spun, kQueueSlack * queue_ms_));
  }
  return LaunchTiming{ms, host, queued ? enqueued - h0 : -1.0};
}

// CUPTI is enabled here and disabled in Stop: only the one recorded launch is traced, never a
// warm-up or timed run.
Status CudaDevice::StartKernelRecord(const std::string& call) {
  recorder_ = std::make_unique<cupti::KernelRecorder>(ctx_, stream_);
  recorder_->Start(call);
  return Status::Ok();
}

Result<nlohmann::json> CudaDevice::StopKernelRecord() {
  if (!recorder_) return Status::InvalidArgument("no kernel record was started");
  api_.CtxSynchronize();  // the record must hold every kernel of the call, finished
  nlohmann::json record = recorder_->Stop();
  recorder_.reset();
  return record;
}

nlohmann::json CudaDevice::PrecisionReport() {
  // nvcc flags are fixed by kforge (no --use_fast_math, IEEE division and sqrt, FMA
  // contraction on as nvcc's default); fast intrinsics and tensor-core math in the source are
  // policed by the static check and the tolerance.
  return {{"build_options", nlohmann::json::array({"nvcc -O3 (no --use_fast_math)"})},
          {"fast_math_options", nlohmann::json::array()},
          {"cache_flushes", flushes_},
          {"persisting_l2_resets", l2_resets_}};
}

Result<double> CudaDevice::TimeKernel(cu::Function fn, unsigned grid, unsigned block, void** params, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps + 1; ++r) {
    KF_RETURN_IF_ERROR(Check(api_.EventRecord(start_, stream_), "cuEventRecord"));
    KF_RETURN_IF_ERROR(Check(api_.LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream_, params, nullptr), "cuLaunchKernel (peaks)"));
    KF_RETURN_IF_ERROR(Check(api_.EventRecord(end_, stream_), "cuEventRecord"));
    KF_RETURN_IF_ERROR(Synchronize());
    float ms = 0;
    KF_RETURN_IF_ERROR(Check(api_.EventElapsedTime(&ms, start_, end_), "cuEventElapsedTime"));
    if (r > 0) best = std::min(best, static_cast<double>(ms));  // the first run warms up
  }
  return best;
}

Result<double> CudaDevice::PeakBandwidth(cu::Function copy) {
  size_t bytes = static_cast<size_t>(std::max<int64_t>(16 * LastLevelCacheBytes(), 1ll << 30));
  KF_ASSIGN_OR_RETURN(BufferId src, Alloc(bytes));
  KF_ASSIGN_OR_RETURN(BufferId dst, Alloc(bytes));
  unsigned char zero = 0;
  KF_RETURN_IF_ERROR(Fill(src, &zero, 1, bytes));
  KF_RETURN_IF_ERROR(Fill(dst, &zero, 1, bytes));
  double ms = 0;
  if (copy) {
    cu::DevicePtr s = buffers_[src], d = buffers_[dst];
    unsigned long long n = bytes / 16;
    void* params[] = {&s, &d, &n};
    KF_ASSIGN_OR_RETURN(ms, TimeKernel(copy, static_cast<unsigned>(Attr(cu::kAttrSmCount) * 8), 512, params, 5));
  } else {
    ms = 1e30;
    for (int r = 0; r < 6; ++r) {
      api_.EventRecord(start_, stream_);
      KF_RETURN_IF_ERROR(Check(api_.MemcpyDtoDAsync(buffers_[dst], buffers_[src], bytes, stream_), "cuMemcpyDtoDAsync"));
      api_.EventRecord(end_, stream_);
      KF_RETURN_IF_ERROR(Synchronize());
      float t = 0;
      api_.EventElapsedTime(&t, start_, end_);
      if (r > 0) ms = std::min(ms, static_cast<double>(t));
    }
  }
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

Result<double> CudaDevice::PeakFma(cu::Function fma) {
  unsigned grid = static_cast<unsigned>(Attr(cu::kAttrSmCount) * 8), block = 256;
  KF_ASSIGN_OR_RETURN(BufferId out, Alloc(size_t{grid} * block * 4));
  cu::DevicePtr o = buffers_[out];
  float a = 0.999999f, b = 1e-7f;
  int iters = 8192;
  void* params[] = {&o, &a, &b, &iters};
  KF_ASSIGN_OR_RETURN(double ms, TimeKernel(fma, grid, block, params, 3));
  double flops = 2.0 * 8 * iters * double(grid) * block;
  return flops / (ms * 1e-3) / 1e9;
}

Result<double> CudaDevice::PeakMma(cu::Function mma) {
  unsigned grid = static_cast<unsigned>(Attr(cu::kAttrSmCount) * 4), block = 256;
  KF_ASSIGN_OR_RETURN(BufferId out, Alloc(size_t{grid} * block * 4));
  cu::DevicePtr o = buffers_[out];
  unsigned seed = 12345;
  int iters = 4096;
  void* params[] = {&o, &seed, &iters};
  KF_ASSIGN_OR_RETURN(double ms, TimeKernel(mma, grid, block, params, 3));
  double warps = double(grid) * block / 32;
  double flops = warps * iters * 4 * (2.0 * 16 * 8 * 16);
  return flops / (ms * 1e-3) / 1e9;
}

Result<Peaks> CudaDevice::MeasurePeaks() {
  Peaks p;
  cu::Module module = nullptr;
  cu::Function copy = nullptr, fma = nullptr, mma = nullptr;
  if (kPeaksPtx[0] && api_.ModuleLoadData(&module, kPeaksPtx) == cu::kSuccess) {
    api_.ModuleGetFunction(&copy, module, "kf_copy");
    api_.ModuleGetFunction(&fma, module, "kf_fma");
    api_.ModuleGetFunction(&mma, module, "kf_mma_bf16");
  }
  KF_ASSIGN_OR_RETURN(p.bandwidth_gbs, PeakBandwidth(copy));
  KF_ASSIGN_OR_RETURN(TheoreticalPeaks bound, ComputeTheoreticalPeaks());
  double theoretical = 0;  // the CUDA cores' fp32 rate
  for (const ComputeUnit& u : bound.units)
    if (u.precision_bits >= 24) theoretical = std::max(theoretical, u.gops);
  p.detail = {{"bandwidth", copy ? "best of 5 runs of kf_copy (peaks.cu, float4 grid-stride) over 16x L2 (>= 1 GiB), read+write bytes"
                                 : "best of 5 cuMemcpyDtoDAsync over 16x L2 (>= 1 GiB), read+write bytes (no peaks PTX in this build)"},
              {"fp32_theoretical_gflops", theoretical}};
  if (fma) {
    KF_ASSIGN_OR_RETURN(p.fp32_gflops, PeakFma(fma));
    p.detail["fp32"] = "best of 3 runs of kf_fma (peaks.cu): 8 FMA chains per thread, 8 blocks of 256 per SM";
  } else {
    p.fp32_gflops = theoretical;
    p.detail["fp32"] = "theoretical: FP32 lanes x 2 flops x SMs x clock (no peaks PTX in this build)";
  }
  if (mma) {
    Result<double> t = PeakMma(mma);
    if (t.ok()) p.detail["tensor_bf16_gflops"] = *t;
    p.detail["tensor_bf16"] = t.ok() ? "best of 3 runs of kf_mma_bf16 (mma.sync m16n8k16, fp32 accumulate)" : t.status().message();
  }
  return p;
}

Result<TheoreticalPeaks> CudaDevice::ComputeTheoreticalPeaks() {
  NvidiaGpuFacts f;
  f.cc_major = Attr(cu::kAttrComputeMajor);
  f.cc_minor = Attr(cu::kAttrComputeMinor);
  f.sm_count = Attr(cu::kAttrSmCount);
  f.clock_mhz = Attr(cu::kAttrClockRateKhz) / 1e3;
  f.memory_clock_mhz = Attr(cu::kAttrMemoryClockKhz) / 1e3;
  f.memory_bus_bits = Attr(cu::kAttrMemoryBusWidth);
  f.l2_bytes = Attr(cu::kAttrL2CacheBytes);
  if (f.sm_count <= 0 || f.cc_major <= 0)
    return Status::Unavailable("the CUDA driver reports no SM count or compute capability for device " + std::to_string(index_));
  return NvidiaTheoreticalPeaks(f);
}

Result<int> DeviceCount(const cu::Api& api) {
  int n = 0;
  cu::Result_t e = api.DeviceGetCount(&n);
  if (e != cu::kSuccess) return Status::Unavailable("cuDeviceGetCount failed: " + cu::ErrorText(api, e));
  if (n == 0) return Status::Unavailable("the NVIDIA driver reports no CUDA device (check nvidia-smi and CUDA_VISIBLE_DEVICES)");
  return n;
}

}  // namespace

Result<std::vector<std::string>> ListCudaDevices() {
  KF_ASSIGN_OR_RETURN(const cu::Api* api, cu::LoadCudaDriver());
  KF_ASSIGN_OR_RETURN(int n, DeviceCount(*api));
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    cu::Device d = 0;
    api->DeviceGet(&d, i);
    char name[256] = {};
    api->DeviceGetName(name, sizeof(name), d);
    int major = 0, minor = 0, sms = 0;
    api->DeviceGetAttribute(&major, cu::kAttrComputeMajor, d);
    api->DeviceGetAttribute(&minor, cu::kAttrComputeMinor, d);
    api->DeviceGetAttribute(&sms, cu::kAttrSmCount, d);
    size_t mem = 0;
    api->DeviceTotalMem(&mem, d);
    out.push_back(std::string(name) + " (sm_" + std::to_string(major) + std::to_string(minor) + ", " +
                  std::to_string(sms) + " SMs, " + std::to_string(mem >> 30) + " GiB)");
  }
  return out;
}

Result<std::unique_ptr<Device>> NewCudaDevice(int index) {
  KF_ASSIGN_OR_RETURN(const cu::Api* api, cu::LoadCudaDriver());
  KF_ASSIGN_OR_RETURN(int n, DeviceCount(*api));
  if (index < 0 || index >= n)
    return Status::NotFound("CUDA device " + std::to_string(index) + " does not exist; there are " +
                            std::to_string(n) + " (see `kforge doctor`)");
  return NewCudaDeviceWithDriver(api, index);
}

Result<std::unique_ptr<Device>> NewCudaDeviceWithDriver(const cu::Api* api, int index) {
  auto dev = std::make_unique<CudaDevice>(api, index);
  KF_RETURN_IF_ERROR(dev->Init());
  return std::unique_ptr<Device>(std::move(dev));
}

// kforge-worker's factory for the cuda backend (backend/devices.inc).
DeviceFactory CudaDeviceFactory() { return {"cuda", NewCudaDevice, ListCudaDevices}; }

}  // namespace kforge
