// CudaDevice over a fake driver: a simulated GPU whose one queue runs in host time, so that
// what Launch reports about a queued (head-started) call is checked without a GPU.
#include "backend/cuda/cuda_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_driver.h"

namespace kforge {
namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The simulated GPU: kernels run one after another; an event completes when the work queued
// before it has. kf_spin takes `cycles` at 1 GHz (1e6 cycles a millisecond), after a launch
// latency; the synchronize returns when the queue is empty.
struct FakeGpu {
  double busy_until = 0;                // host ms at which the queued work ends
  std::map<cu::Event, double> events;  // recorded event -> host ms it completed
  int next_event = 1;
  int spins = 0;
  long long last_cycles = 0;
  unsigned last_grid = 0, last_block = 0;
  double extra_spin_ms = 0;  // a spin held back this much longer (as by a kernel of the candidate's)
  std::map<void*, size_t> pinned;  // page-locked host ranges (cuMemHostRegister)
  bool refuse_pin = false;
  static constexpr double kLaunchLatencyMs = 0.005;
};
FakeGpu* gpu = nullptr;
int kSpinFunction = 0;

cu::Result_t Ok() { return cu::kSuccess; }
cu::Result_t Init(unsigned) { return Ok(); }
cu::Result_t DriverGetVersion(int* v) { *v = 13000; return Ok(); }
cu::Result_t DeviceGetCount(int* n) { *n = 1; return Ok(); }
cu::Result_t DeviceGet(cu::Device* d, int) { *d = 0; return Ok(); }
cu::Result_t DeviceGetName(char* name, int len, cu::Device) { std::snprintf(name, len, "Fake GPU"); return Ok(); }
cu::Result_t DeviceGetAttribute(int* v, int attr, cu::Device) {
  *v = attr == cu::kAttrSmCount ? 4 : attr == cu::kAttrMaxThreadsPerSm ? 2048 : 1;
  return Ok();
}
cu::Result_t DeviceTotalMem(size_t* bytes, cu::Device) { *bytes = size_t{1} << 30; return Ok(); }
cu::Result_t DevicePrimaryCtxRetain(cu::Context* c, cu::Device) { *c = reinterpret_cast<cu::Context>(gpu); return Ok(); }
cu::Result_t DevicePrimaryCtxRelease(cu::Device) { return Ok(); }
cu::Result_t CtxSetCurrent(cu::Context) { return Ok(); }
cu::Result_t CtxSynchronize() {
  while (NowMs() < gpu->busy_until) std::this_thread::yield();
  return Ok();
}
cu::Result_t CtxSetLimit(int, size_t) { return Ok(); }
cu::Result_t CtxResetPersistingL2Cache() { return Ok(); }
cu::Result_t StreamCreate(cu::Stream* s, unsigned) { *s = reinterpret_cast<cu::Stream>(gpu); return Ok(); }
cu::Result_t StreamDestroy(cu::Stream) { return Ok(); }
cu::Result_t StreamSynchronize(cu::Stream) { return CtxSynchronize(); }
cu::Result_t StreamSetAttribute(cu::Stream, int, const cu::StreamAttrValue*) { return Ok(); }
cu::Result_t EventCreate(cu::Event* e, unsigned) {
  *e = reinterpret_cast<cu::Event>(static_cast<intptr_t>(gpu->next_event++));
  return Ok();
}
cu::Result_t EventDestroy(cu::Event) { return Ok(); }
cu::Result_t EventRecord(cu::Event e, cu::Stream) {
  gpu->events[e] = std::max(NowMs() + FakeGpu::kLaunchLatencyMs, gpu->busy_until);
  return Ok();
}
cu::Result_t EventElapsedTime(float* ms, cu::Event a, cu::Event b) {
  *ms = static_cast<float>(gpu->events.at(b) - gpu->events.at(a));
  return Ok();
}
cu::Result_t MemAlloc(cu::DevicePtr* p, size_t) { *p = 0x1000; return Ok(); }
cu::Result_t MemFree(cu::DevicePtr) { return Ok(); }
cu::Result_t MemcpyHtoD(cu::DevicePtr, const void*, size_t) { return CtxSynchronize(); }
cu::Result_t MemcpyDtoH(void*, cu::DevicePtr, size_t) { return CtxSynchronize(); }
cu::Result_t MemHostRegister(void* p, size_t bytes, unsigned) {
  if (gpu->refuse_pin || !gpu->pinned.emplace(p, bytes).second) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
  return Ok();
}
cu::Result_t MemHostUnregister(void* p) { return gpu->pinned.erase(p) == 1 ? cu::kSuccess : 1; }
cu::Result_t MemcpyDtoDAsync(cu::DevicePtr, cu::DevicePtr, size_t, cu::Stream) { return Ok(); }
cu::Result_t MemsetD8Async(cu::DevicePtr, unsigned char, size_t, cu::Stream) { return Ok(); }
cu::Result_t MemsetD16Async(cu::DevicePtr, unsigned short, size_t, cu::Stream) { return Ok(); }
cu::Result_t MemsetD32Async(cu::DevicePtr, unsigned, size_t, cu::Stream) { return Ok(); }
cu::Result_t ModuleLoadData(cu::Module* m, const void*) { *m = reinterpret_cast<cu::Module>(gpu); return Ok(); }
cu::Result_t ModuleGetFunction(cu::Function* f, cu::Module, const char* name) {
  *f = reinterpret_cast<cu::Function>(&kSpinFunction);
  return std::string(name) == "kf_spin" ? cu::kSuccess : 500;  // CUDA_ERROR_NOT_FOUND
}
cu::Result_t LaunchKernel(cu::Function, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned, unsigned,
                          cu::Stream, void** params, void**) {
  const long long cycles = *static_cast<long long*>(params[0]);
  gpu->busy_until = std::max(NowMs() + FakeGpu::kLaunchLatencyMs, gpu->busy_until) + cycles / 1e6 + gpu->extra_spin_ms;
  ++gpu->spins;
  gpu->last_cycles = cycles, gpu->last_grid = gx, gpu->last_block = bx;
  return Ok();
}
cu::Result_t GetErrorName(cu::Result_t, const char** s) { *s = "CUDA_ERROR_FAKE"; return Ok(); }
cu::Result_t GetErrorString(cu::Result_t, const char** s) { *s = "a fake driver's error"; return Ok(); }

const cu::Api kFakeApi = {Init, DriverGetVersion, DeviceGetCount, DeviceGet, DeviceGetName, DeviceGetAttribute,
                          DeviceTotalMem, DevicePrimaryCtxRetain, DevicePrimaryCtxRelease, CtxSetCurrent,
                          CtxSynchronize, CtxSetLimit, CtxResetPersistingL2Cache, StreamCreate, StreamDestroy,
                          StreamSynchronize, StreamSetAttribute, EventCreate, EventDestroy, EventRecord,
                          EventElapsedTime, MemAlloc, MemFree, MemcpyHtoD, MemcpyDtoH, MemHostRegister,
                          MemHostUnregister, MemcpyDtoDAsync,
                          MemsetD8Async, MemsetD16Async, MemsetD32Async, ModuleLoadData, ModuleGetFunction,
                          LaunchKernel, GetErrorName, GetErrorString};

class CudaFakeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { gpu = &gpu_; }
  void TearDown() override { gpu = nullptr; }
  // The device over the fake driver, with a head start of `ms`; null on a failure (recorded) or
  // where this build has no spin kernel (`unqueued_` says why: the test skips).
  std::unique_ptr<Device> Queued(double ms) {
    Result<std::unique_ptr<Device>> dev = NewCudaDeviceWithDriver(&kFakeApi, 0);
    if (!dev.ok()) {
      ADD_FAILURE() << dev.status().ToString();
      return nullptr;
    }
    Status set = (*dev)->SetQueue(ms);
    if (!set.ok()) {
      ADD_FAILURE() << set.ToString();
      return nullptr;
    }
    const nlohmann::json fp = (*dev)->Fingerprint();
    if (fp.contains("queue_note")) {
      unqueued_ = fp["queue_note"].get<std::string>();
      return nullptr;
    }
    EXPECT_NEAR(fp.value("queue_ms", 0.0), ms, 1e-9);
    return std::move(*dev);
  }
  std::string unqueued_;

  FakeGpu gpu_;
};

// The worker's shared region (outputs are handed over there) is page-locked while the device is
// open and released with it; a driver that refuses leaves it pageable, and the job goes on.
TEST_F(CudaFakeDriverTest, GivenHostMemoryToPinItIsPinnedUntilTheDeviceClosesAndARefusalIsNoError) {
  std::vector<char> region(1 << 20);
  {
    Result<std::unique_ptr<Device>> dev = NewCudaDeviceWithDriver(&kFakeApi, 0);
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    EXPECT_TRUE((*dev)->PinHostMemory(region.data(), region.size()));
    ASSERT_EQ(gpu_.pinned.count(region.data()), 1u);
    EXPECT_EQ(gpu_.pinned[region.data()], region.size());
    EXPECT_FALSE((*dev)->PinHostMemory(nullptr, 0));
  }
  EXPECT_TRUE(gpu_.pinned.empty()) << "unpinned when the device closed";
  gpu_.refuse_pin = true;
  Result<std::unique_ptr<Device>> dev = NewCudaDeviceWithDriver(&kFakeApi, 0);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_FALSE((*dev)->PinHostMemory(region.data(), region.size()));
  EXPECT_TRUE(gpu_.pinned.empty());
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST_F(CudaFakeDriverTest, GivenAHeadStartAQueuedCallsHostTimeLeavesOutTheSpin) {
  std::unique_ptr<Device> dev = Queued(5.0);
  if (!dev) GTEST_SKIP() << unqueued_;
  // Every thread slot of every SM: 4 SMs x 2048 / 512.
  EXPECT_EQ(gpu_.last_grid, 16u);
  EXPECT_EQ(gpu_.last_block, 512u);
  // The spin's length comes from the calibration (5 ms, less if the test was descheduled while
  // it ran). Each call's wall time holds the spin, and its host time must not: the two differ by
  // at least the spin, whatever else the scheduler adds to either (on a loaded machine the fake's
  // synchronize alone returned 3 ms late).
  std::vector<double> device, enqueue;
  for (int i = 0; i < 5; ++i) {
    LaunchArgs args;
    args.queued = true;
    const int spins = gpu_.spins;
    const double t0 = NowMs();
    Result<LaunchTiming> t = dev->Launch(args);  // nothing loaded: a null run
    const double wall = NowMs() - t0;
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(gpu_.spins, spins + 1) << "a queued launch spins once";
    const double spin_ms = gpu_.last_cycles / 1e6;
    EXPECT_GT(spin_ms, 0.1);
    EXPECT_LE(spin_ms, 5.01);
    EXPECT_GE(wall, spin_ms) << "the call waits behind the head start";
    // The call itself does nothing on the device: its host time is the launch path's, not the
    // spin before it (which the host_time gate would read as work escaping the events).
    EXPECT_GE(wall - t->host_ms, 0.99 * spin_ms) << "host time holds the head start: " << t->host_ms << " ms";
    device.push_back(t->device_ms), enqueue.push_back(t->enqueue_ms);
  }
  EXPECT_LT(Median(device), 0.1);
  EXPECT_GE(Median(enqueue), 0.0);
  // An unqueued launch spins not and reports no enqueue time.
  LaunchArgs plain;
  const int spins = gpu_.spins;
  Result<LaunchTiming> t = dev->Launch(plain);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(gpu_.spins, spins);
  EXPECT_EQ(t->enqueue_ms, -1.0);
}

// Only the head start's own length is left out: a spin held back far longer (by a kernel of the
// candidate's on another stream, or by work it queued ahead of the start event) keeps the rest
// in the host time, where the host_time gate sees it.
TEST_F(CudaFakeDriverTest, GivenSomethingThatHoldsTheHeadStartBackTheExcessStaysInTheHostTime) {
  std::unique_ptr<Device> dev = Queued(5.0);
  if (!dev) GTEST_SKIP() << unqueued_;
  gpu_.extra_spin_ms = 4.0;  // the start event comes 9 ms after the event before the spin
  LaunchArgs args;
  args.queued = true;
  Result<LaunchTiming> t = dev->Launch(args);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // At most 1.25 head starts (6.25 ms) are left out of about 9.
  EXPECT_GE(t->host_ms, 2.5);
}

TEST_F(CudaFakeDriverTest, GivenNoHeadStartNothingIsSpunAndTheFingerprintSaysZero) {
  Result<std::unique_ptr<Device>> dev = NewCudaDeviceWithDriver(&kFakeApi, 0);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  ASSERT_TRUE((*dev)->SetQueue(0).ok());
  EXPECT_EQ((*dev)->Fingerprint().value("queue_ms", -1.0), 0.0);
  LaunchArgs args;
  args.queued = true;
  Result<LaunchTiming> t = (*dev)->Launch(args);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(gpu_.spins, 0);
  EXPECT_EQ(t->enqueue_ms, -1.0);
}

}  // namespace
}  // namespace kforge
