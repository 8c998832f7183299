// Device: what the worker needs from a backend to run and time one candidate.
//
// A Device owns buffers on one compute device, loads one candidate (a shared library built by
// kforge, plus a program source for source-compiled backends), launches it, and times each
// launch with the device's own timer and the host clock. Implementations hide in their
// backend's folder behind a factory (cpu/cpu_device.h, opencl/opencl_device.h); the list of
// backends is the table in backend/registry.h.
//
// Devices run inside kforge-worker only: the candidate they load is untrusted code.
// Thread-safety: single-threaded use.
#ifndef KFORGE_BACKEND_DEVICE_H_
#define KFORGE_BACKEND_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/theoretical_peaks.h"
#include "kforge/status.h"
#include "kforge/tensor.h"

namespace kforge {

using BufferId = int;

// What to load: a candidate library and the symbol to call.
struct KernelSpec {
  std::string library;         // path of the shared library
  std::string entry;           // exported function: kf_run, kf_cl_run, kf_reference_f64, ...
  std::string program_source;  // text handed to source-compiled backends (OpenCL), or empty
};

struct LaunchTensor {
  TensorShape shape;
  BufferId buffer = -1;
};

struct LaunchAttr {
  std::string name;
  int64_t i = 0;
  double f = 0;
};

struct LaunchArgs {
  std::vector<LaunchTensor> inputs;
  std::vector<LaunchTensor> outputs;
  std::vector<LaunchAttr> attrs;
  BufferId scratch = -1;  // -1: none
  int64_t scratch_bytes = 0;
  // Behind the device's head start (SetQueue): the worker's timed and null runs.
  bool queued = false;
};

// One timed launch.
struct LaunchTiming {
  double device_ms = 0;  // the device's timer (OpenCL markers; the host clock on the CPU)
  double host_ms = 0;    // host wall clock around launch and synchronize (less a head start's device time)
  // A queued launch behind a head start: the host's time from the start event to the end
  // event (the launch path the head start had to cover); -1 otherwise.
  double enqueue_ms = -1;
};

// Measured (achievable) device limits: they give SOL%. The speed-of-light gate uses the
// theoretical peaks instead (theoretical_peaks.h), which no timing can lower.
struct Peaks {
  double bandwidth_gbs = 0;  // GB/s (1e9 bytes) from a large copy, read + write bytes
  double fp32_gflops = 0;    // GFLOP/s from an FMA loop (2 flops per FMA)
  nlohmann::json detail;     // how each was measured
};

class Device {
 public:
  virtual ~Device() = default;

  // Device name, driver/platform, versions, cache sizes, clocks where readable.
  virtual nlohmann::json Fingerprint() = 0;
  // Bytes of the last-level cache a flush must cover (0 when unknown).
  virtual int64_t LastLevelCacheBytes() = 0;

  virtual Result<BufferId> Alloc(size_t bytes) = 0;
  virtual Status Write(BufferId b, const void* src, size_t bytes) = 0;
  virtual Status Read(BufferId b, void* dst, size_t bytes) = 0;
  // Fills `bytes` bytes with a repeated 1-, 2-, 4- or 8-byte pattern.
  virtual Status Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) = 0;
  // A digest of the first `bytes` of b computed where b lives, nothing copied to the host (the
  // formula of kforge_pychild.py's device_digest); "" when this device has none, and the worker
  // reads b back and hashes it on the host instead. Compared only with digests of this device.
  virtual Result<std::string> Digest(BufferId b, size_t bytes) { return std::string(); }
  // b's bytes in this process's memory, where the device's buffers are host memory (the CPU):
  // the worker hashes inputs after a run and reads check outputs there, with no copy through a
  // staging buffer. Counts as a touch for the next FlushCaches(). nullptr (the default) for
  // devices with memory of their own: the worker reads b instead.
  virtual char* HostMemory(BufferId b) {
    (void)b;
    return nullptr;
  }
  // Page-locks `bytes` of this process's memory at `p` (page-aligned) for the device's copies,
  // where that makes Read into it one DMA instead of copies through a staging buffer (CUDA:
  // a KernelBench GEMM's 32 MiB output handed over in the worker's shared region). Kept until
  // the device is closed. Returns whether it did; the default does nothing.
  virtual bool PinHostMemory(void* p, size_t bytes) {
    (void)p;
    (void)bytes;
    return false;
  }
  // Evicts the device's caches by writing a buffer twice the last-level cache.
  virtual Status FlushCaches() = 0;
  virtual Status Synchronize() = 0;
  // A head start of about `ms` before each queued launch (LaunchArgs::queued): the device is
  // kept busy while the host records the start event and the candidate's launches, so that the
  // device timer measures the device's work and not the host's launch path. The device says in
  // its Fingerprint() what it set ("queue_ms") or why it set none ("queue_note"). Devices
  // without one (the default) ignore it: their timers do not start before the work is queued,
  // or they have no queue (the CPU).
  virtual Status SetQueue(double ms) {
    (void)ms;
    return Status::Ok();
  }

  // Loads the candidate. Fails with a message when the library or entry point is missing.
  virtual Status Load(const KernelSpec& spec) = 0;
  // Scratch bytes the candidate asks for (0 when it exports no request).
  virtual Result<int64_t> ScratchBytes(const LaunchArgs& args) = 0;
  // Runs the candidate once and waits for it. A non-OK Status carries the candidate's message.
  // Before Load() it runs nothing through the same timers: the worker's null runs.
  virtual Result<LaunchTiming> Launch(const LaunchArgs& args) = 0;
  // Precision-relevant settings the candidate chose (e.g. OpenCL build options), as JSON.
  virtual nlohmann::json PrecisionReport() = 0;
  // For backends that build kernel source while the candidate runs (OpenCL's clBuildProgram):
  // the build that failed during the last Launch(), when that Launch() failed, as
  // {"log": the driver's build log, "options": build options, "source": the source text,
  // "code": the driver's error code}, each bounded (docs/worker-protocol.md). Null otherwise,
  // and always for backends that build nothing at run time (the default).
  virtual nlohmann::json LastBuildFailure() { return nullptr; }

  // Which kernels the candidate ran, recorded over the next Launch() only (the raw "kernels"
  // record of docs/worker-protocol.md; `call` names it there, e.g. "check set 0").
  // StartKernelRecord arms the recorder; StopKernelRecord, after that Launch, ends recording
  // and returns the record. A backend that can record never fails the evaluation for it: when
  // its tracer cannot start (missing, no permission) Start still succeeds and the record says
  // {"available": false, "reason"}. Backends without a recorder (the default) return
  // Unavailable from both; the worker then writes no record.
  virtual Status StartKernelRecord(const std::string& call) {
    (void)call;
    return Status::Unavailable("this backend does not record which kernels ran");
  }
  virtual Result<nlohmann::json> StopKernelRecord() {
    return Status::Unavailable("this backend does not record which kernels ran");
  }

  virtual Result<Peaks> MeasurePeaks() = 0;
  // Upper bounds from what the device is (attributes, ISA, clocks), without running anything.
  virtual Result<TheoreticalPeaks> ComputeTheoreticalPeaks() = 0;
};

}  // namespace kforge

#endif  // KFORGE_BACKEND_DEVICE_H_
