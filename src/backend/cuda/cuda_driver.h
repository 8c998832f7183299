// The CUDA driver API, loaded at run time from libcuda.so.1 (the NVIDIA driver) through a
// table of function pointers, so that kforge-worker builds without the CUDA toolkit and runs
// on machines without a driver (where opening the backend says so).
//
// Only the handful of types and constants kforge uses are declared here, with the values of
// the driver ABI (cuda.h); nothing includes cuda.h. Thread-safety: LoadCudaDriver is safe to
// call from any thread; the table is immutable once loaded.
#ifndef KFORGE_BACKEND_CUDA_CUDA_DRIVER_H_
#define KFORGE_BACKEND_CUDA_CUDA_DRIVER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "kforge/status.h"

namespace kforge {
namespace cu {

using Result_t = int;  // CUresult; 0 is CUDA_SUCCESS
using Device = int;
using DevicePtr = unsigned long long;
using Context = struct CUctx_st*;
using Stream = struct CUstream_st*;  // the same object as a runtime cudaStream_t
using Event = struct CUevent_st*;
using Module = struct CUmod_st*;
using Function = struct CUfunc_st*;

constexpr Result_t kSuccess = 0;
constexpr Result_t kErrorNotReady = 600;

// CUdevice_attribute values.
constexpr int kAttrClockRateKhz = 13;
constexpr int kAttrSmCount = 16;
constexpr int kAttrPciBusId = 33;
constexpr int kAttrMemoryClockKhz = 36;
constexpr int kAttrMemoryBusWidth = 37;
constexpr int kAttrL2CacheBytes = 38;
constexpr int kAttrMaxThreadsPerSm = 39;
constexpr int kAttrComputeMajor = 75;
constexpr int kAttrComputeMinor = 76;
constexpr int kAttrMaxPersistingL2Bytes = 108;

constexpr int kLimitPersistingL2CacheSize = 0x06;    // CUlimit
constexpr int kStreamAttrAccessPolicyWindow = 1;     // CUstreamAttrID
constexpr unsigned kStreamNonBlocking = 0x1;

// CUaccessPolicyWindow inside the 64-byte CUstreamAttrValue union.
struct AccessPolicyWindow {
  void* base_ptr;
  size_t num_bytes;
  float hit_ratio;
  int hit_prop;   // CUaccessProperty: 0 normal, 1 streaming, 2 persisting
  int miss_prop;
};
union StreamAttrValue {
  char pad[64];
  AccessPolicyWindow access_policy_window;
};

// The driver entry points kforge calls. Names are the exported (versioned) symbols.
struct Api {
  Result_t (*Init)(unsigned flags);
  Result_t (*DriverGetVersion)(int* version);
  Result_t (*DeviceGetCount)(int* count);
  Result_t (*DeviceGet)(Device* dev, int ordinal);
  Result_t (*DeviceGetName)(char* name, int len, Device dev);
  Result_t (*DeviceGetAttribute)(int* value, int attribute, Device dev);
  Result_t (*DeviceTotalMem)(size_t* bytes, Device dev);
  Result_t (*DevicePrimaryCtxRetain)(Context* ctx, Device dev);
  Result_t (*DevicePrimaryCtxRelease)(Device dev);
  Result_t (*CtxSetCurrent)(Context ctx);
  Result_t (*CtxSynchronize)();
  Result_t (*CtxSetLimit)(int limit, size_t value);
  Result_t (*CtxResetPersistingL2Cache)();
  Result_t (*StreamCreate)(Stream* stream, unsigned flags);
  Result_t (*StreamDestroy)(Stream stream);
  Result_t (*StreamSynchronize)(Stream stream);
  Result_t (*StreamSetAttribute)(Stream stream, int attr, const StreamAttrValue* value);
  Result_t (*EventCreate)(Event* event, unsigned flags);
  Result_t (*EventDestroy)(Event event);
  Result_t (*EventRecord)(Event event, Stream stream);
  Result_t (*EventElapsedTime)(float* ms, Event start, Event end);
  Result_t (*MemAlloc)(DevicePtr* ptr, size_t bytes);
  Result_t (*MemFree)(DevicePtr ptr);
  Result_t (*MemcpyHtoD)(DevicePtr dst, const void* src, size_t bytes);
  Result_t (*MemcpyDtoH)(void* dst, DevicePtr src, size_t bytes);
  Result_t (*MemHostRegister)(void* p, size_t bytes, unsigned flags);
  Result_t (*MemHostUnregister)(void* p);
  Result_t (*MemcpyDtoDAsync)(DevicePtr dst, DevicePtr src, size_t bytes, Stream stream);
  Result_t (*MemsetD8Async)(DevicePtr dst, unsigned char value, size_t n, Stream stream);
  Result_t (*MemsetD16Async)(DevicePtr dst, unsigned short value, size_t n, Stream stream);
  Result_t (*MemsetD32Async)(DevicePtr dst, unsigned value, size_t n, Stream stream);
  Result_t (*ModuleLoadData)(Module* module, const void* image);
  Result_t (*ModuleGetFunction)(Function* fn, Module module, const char* name);
  Result_t (*LaunchKernel)(Function fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned shared_bytes, Stream stream,
                           void** params, void** extra);
  Result_t (*GetErrorName)(Result_t error, const char** name);
  Result_t (*GetErrorString)(Result_t error, const char** text);
};

// Loads libcuda.so.1 once per process and calls cuInit(0). Returns the table, or Unavailable
// with what to install when there is no NVIDIA driver or it cannot initialise (no GPU, a
// driver/library version mismatch).
Result<const Api*> LoadCudaDriver();

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
std::string ErrorText(const Api& api, Result_t error);

}  // namespace cu
}  // namespace kforge

#endif  // KFORGE_BACKEND_CUDA_CUDA_DRIVER_H_
