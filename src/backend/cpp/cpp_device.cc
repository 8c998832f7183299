// The host CPU as a kforge device. Buffers are 64-byte aligned host allocations; a launch is a
// direct call into the candidate's kf_run, timed with the steady clock.
#include "backend/cpp/cpp_device.h"
#include "backend/cpp/cache_flush.h"
#include "backend/devices.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "abi/kforge_cpu.h"
#include "backend/cpp/cpu_peaks.h"
#include "backend/host_args.h"
#include "base/files.h"

namespace kforge {

namespace {

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

double Now() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using RunFn = int (*)(const kf_cpu_args*);
using ScratchFn = int64_t (*)(const kf_cpu_args*);

// Host buffers of 2 MiB and more are 2 MiB aligned and asked for as transparent huge pages
// (where THP is "madvise", as on Debian): the first touch of an 8 MiB tensor is then 4 page
// faults instead of 2,048, which on a VM cost more than the copy into it. Free with free().
void* AllocHost(size_t bytes) {
  constexpr size_t kHuge = 2 << 20;
  if (bytes < kHuge) return std::aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64);
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, rounded);
  if (p) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP the pages stay small
  return p;
}

class CppDevice : public Device {
 public:
  ~CppDevice() override {
    for (void* p : buffers_) std::free(p);
    std::free(flush_);
    // The candidate library stays loaded: unloading untrusted code that may have left
    // OpenMP threads behind can crash at exit.
  }

  nlohmann::json Fingerprint() override {
    nlohmann::json j = HostCpuFingerprint();
    j["cache_flush"] = LineEvictionAvailable() ? "touched buffers' lines evicted" : "overwrite";  // cache_flush.h
    return j;
  }
  int64_t LastLevelCacheBytes() override { return HostLastLevelCacheBytes(); }

  Result<BufferId> Alloc(size_t bytes) override {
    void* p = AllocHost(bytes);
    if (!p) return Status::Unavailable("out of host memory allocating " + std::to_string(bytes));
    buffers_.push_back(p);
    sizes_.push_back(bytes);
    touched_.push_back(true);
    return static_cast<BufferId>(buffers_.size() - 1);
  }
  Status Write(BufferId b, const void* src, size_t bytes) override {
    std::memcpy(buffers_[b], src, bytes);
    touched_[b] = true;
    return Status::Ok();
  }
  Status Read(BufferId b, void* dst, size_t bytes) override {
    std::memcpy(dst, buffers_[b], bytes);
    touched_[b] = true;
    return Status::Ok();
  }
  Status Fill(BufferId b, const void* pattern, size_t pattern_bytes, size_t bytes) override {
    FillPattern(buffers_[b], pattern, pattern_bytes, bytes);
    touched_[b] = true;
    return Status::Ok();
  }
  char* HostMemory(BufferId b) override {
    touched_[b] = true;
    return static_cast<char*>(buffers_[b]);
  }
  Status FlushCaches() override;
  Status Synchronize() override { return Status::Ok(); }
  Status Load(const KernelSpec& spec) override;
  Result<int64_t> ScratchBytes(const LaunchArgs& args) override;
  Result<LaunchTiming> Launch(const LaunchArgs& args) override;
  nlohmann::json PrecisionReport() override { return nlohmann::json::object(); }
  Result<Peaks> MeasurePeaks() override;
  Result<TheoreticalPeaks> ComputeTheoreticalPeaks() override { return CpuTheoreticalPeaks(ReadHostCpuFacts()); }

 private:
  void* Data(BufferId b) { return b < 0 ? nullptr : buffers_[b]; }
  void Touch(const LaunchArgs& args) {
    for (const LaunchTensor& t : args.inputs) touched_[t.buffer] = true;
    for (const LaunchTensor& t : args.outputs) touched_[t.buffer] = true;
    if (args.scratch >= 0) touched_[args.scratch] = true;
  }

  std::vector<void*> buffers_;
  std::vector<size_t> sizes_;
  // Since the last flush: written, read, filled or passed to a launch (the buffers whose lines
  // the next flush evicts; the rest were evicted before and nothing of the harness read them).
  std::vector<bool> touched_;
  char* flush_ = nullptr;
  size_t flush_bytes_ = 0;
  unsigned char flush_value_ = 0;
  RunFn run_ = nullptr;
  ScratchFn scratch_ = nullptr;
  char error_[4096] = {};
};

// cache_flush.h: the buffers' lines evicted and the private caches overwritten, or (without
// clflushopt, or buffers far larger than the LLC) twice the LLC overwritten.
Status CppDevice::FlushCaches() {
  size_t touched = 0;
  for (size_t b = 0; b < sizes_.size(); ++b) touched += touched_[b] ? sizes_[b] : 0;
  const FlushPlan plan = PlanFlush(touched, true, OverwriteBytes(HostCaches(), FlushMethod::kOverwrite));
  const size_t bytes = plan.overwrite_bytes;
  if (bytes > flush_bytes_) {
    std::free(flush_);
    flush_bytes_ = bytes;
    flush_ = static_cast<char*>(AllocHost(flush_bytes_));
    if (!flush_) return Status::Unavailable("cannot allocate the cache-flush buffer");
  }
  std::memset(flush_, ++flush_value_, bytes);
  for (size_t b = 0; b < buffers_.size(); ++b) {
    if (plan.method == FlushMethod::kEvictLines && touched_[b]) EvictLines(buffers_[b], sizes_[b]);
    touched_[b] = false;  // the overwrite evicted it, or its lines were
  }
  return Status::Ok();
}

Status CppDevice::Load(const KernelSpec& spec) {
  void* lib = dlopen(spec.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Status::InvalidArgument(std::string("cannot load candidate: ") + dlerror());
  run_ = reinterpret_cast<RunFn>(dlsym(lib, spec.entry.c_str()));
  if (!run_)
    return Status::InvalidArgument("candidate exports no function '" + spec.entry +
                                   "'; declare it extern \"C\" (see the backend's ABI header)");
  scratch_ = reinterpret_cast<ScratchFn>(dlsym(lib, "kf_scratch_bytes"));
  return Status::Ok();
}

Result<int64_t> CppDevice::ScratchBytes(const LaunchArgs& args) {
  if (!scratch_) return int64_t{0};
  HostArgs h(args, [this](BufferId b) { return Data(b); });
  Touch(args);
  int64_t n = scratch_(&h.args);
  if (n < 0 || n > (int64_t{64} << 30))
    return Status::InvalidArgument("kf_scratch_bytes returned " + std::to_string(n));
  return n;
}

Result<LaunchTiming> CppDevice::Launch(const LaunchArgs& args) {
  HostArgs h(args, [this](BufferId b) { return Data(b); });
  Touch(args);
  h.args.error = error_;
  h.args.error_capacity = sizeof(error_);
  error_[0] = '\0';
  double t0 = Now();
  int rc = run_ ? run_(&h.args) : 0;  // nothing loaded: a null run (the worker's calibration)
  double t1 = Now();
  if (rc != 0) {
    return Status::InvalidArgument("kf_run returned " + std::to_string(rc) +
                                   (error_[0] ? std::string(": ") + error_ : std::string()));
  }
  return LaunchTiming{t1 - t0, t1 - t0};
}

Result<Peaks> CppDevice::MeasurePeaks() {
  Peaks p;
  size_t bytes = static_cast<size_t>(std::max<int64_t>(8 * LastLevelCacheBytes(), 256 << 20));
  p.bandwidth_gbs = MeasureCopyBandwidthGbs(bytes);
  p.fp32_gflops = MeasureFmaGflops();
  p.detail = {{"bandwidth", "best of 5 parallel copies of " + std::to_string(bytes >> 20) +
                                " MiB (read+write bytes) and of parallel sums (read bytes), the larger"},
              {"fp32", "best of 3 runs of 256 independent FMA chains per core, OpenMP"}};
  return p;
}

}  // namespace


nlohmann::json HostCpuFingerprint() {
  utsname u{};
  uname(&u);
  nlohmann::json j = {{"kind", "cpu"},
                      {"name", CpuModelName()},
                      {"cores", std::thread::hardware_concurrency()},
                      {"llc_bytes", HostLastLevelCacheBytes()},
                      {"os", std::string(u.sysname) + " " + u.release}};
  std::string khz = ReadFirstLine("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq");
  if (!khz.empty()) j["clock_mhz"] = std::atoll(khz.c_str()) / 1000;
  std::string gov = ReadFirstLine("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  if (!gov.empty()) j["governor"] = gov;
  return j;
}

int64_t HostLastLevelCacheBytes() {
  const int64_t llc = HostCaches().llc;
  return llc > 0 ? llc : int64_t{32} << 20;  // unknown: assume a large LLC
}

std::unique_ptr<Device> NewCppDevice() { return std::make_unique<CppDevice>(); }

// kforge-worker's factory for the cpp backend (backend/devices.inc).
DeviceFactory CppDeviceFactory() {
  auto open = [](int index) -> Result<std::unique_ptr<Device>> {
    if (index != 0) return Status::NotFound("the cpp backend has one device, 0 (the host CPU)");
    return NewCppDevice();
  };
  auto list = []() -> Result<std::vector<std::string>> {
    return std::vector<std::string>{HostCpuFingerprint()["name"].get<std::string>() + " (host)"};
  };
  return {"cpp", open, list};
}

}  // namespace kforge
