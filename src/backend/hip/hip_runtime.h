// The HIP runtime API, loaded at run time from libamdhip64 (ROCm) through a table of function
// pointers, so that kforge-worker builds without ROCm and runs on machines without it (where
// opening the backend says what to install).
//
// Only the types and constants kforge uses are declared here, with the values of ROCm 5.2's
// hip_runtime_api.h (hip_test.cc checks them against the installed header where there is one);
// nothing includes the HIP headers. Thread-safety: LoadHipRuntime is safe to call from any
// thread; the table is immutable once loaded.
#ifndef KFORGE_BACKEND_HIP_HIP_RUNTIME_H_
#define KFORGE_BACKEND_HIP_HIP_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kforge/status.h"

namespace kforge {
namespace hip {

using Error = int;  // hipError_t; 0 is hipSuccess
using Stream = struct ihipStream_t*;
using Event = struct ihipEvent_t*;

constexpr Error kSuccess = 0;
constexpr Error kErrorNoDevice = 100;
constexpr Error kErrorInvalidDevice = 101;

// hipDeviceAttribute_t values.
constexpr int kAttrClockRateKhz = 5;
constexpr int kAttrL2CacheBytes = 19;
constexpr int kAttrMemoryBusWidth = 59;
constexpr int kAttrMemoryClockKhz = 60;
constexpr int kAttrComputeUnits = 63;  // hipDeviceAttributeMultiprocessorCount
constexpr int kAttrPciBusId = 67;
constexpr int kAttrWarpSize = 87;

constexpr int kMemcpyHostToDevice = 1;  // hipMemcpyKind
constexpr int kMemcpyDeviceToHost = 2;
constexpr int kMemcpyDeviceToDevice = 3;

// hipDeviceProp_t is read into a buffer larger than any version's struct; only the fields at
// these offsets of the ROCm 5 layout (also exported by ROCm 6 as hipGetDevicePropertiesR0000)
// are used.
constexpr size_t kPropBufferBytes = 8192;
constexpr size_t kPropNameOffset = 0;           // char name[256]
constexpr size_t kPropGcnArchNameOffset = 396;  // char gcnArchName[256], "gfx90a:sramecc+:xnack-"
constexpr size_t kPropTotalGlobalMemOffset = 256;  // size_t totalGlobalMem

// The runtime entry points kforge calls, by their exported names.
struct Api {
  Error (*Init)(unsigned flags);
  Error (*DriverGetVersion)(int* version);
  Error (*RuntimeGetVersion)(int* version);
  Error (*GetDeviceCount)(int* count);
  Error (*SetDevice)(int device);
  Error (*DeviceGetAttribute)(int* value, int attribute, int device);
  Error (*GetDeviceProperties)(void* prop, int device);
  Error (*DeviceSynchronize)();
  Error (*StreamCreate)(Stream* stream);
  Error (*StreamDestroy)(Stream stream);
  Error (*EventCreate)(Event* event);
  Error (*EventDestroy)(Event event);
  Error (*EventRecord)(Event event, Stream stream);
  Error (*EventElapsedTime)(float* ms, Event start, Event end);
  Error (*Malloc)(void** ptr, size_t bytes);
  Error (*Free)(void* ptr);
  Error (*Memcpy)(void* dst, const void* src, size_t bytes, int kind);
  Error (*MemcpyAsync)(void* dst, const void* src, size_t bytes, int kind, Stream stream);
  Error (*MemsetD8Async)(void* dst, unsigned char value, size_t n, Stream stream);
  Error (*MemsetD16Async)(void* dst, unsigned short value, size_t n, Stream stream);
  Error (*MemsetD32Async)(void* dst, int value, size_t n, Stream stream);
  const char* (*GetErrorName)(Error error);
  const char* (*GetErrorString)(Error error);
};

// The file names tried, in order: $KFORGE_HIP_RUNTIME when set, else libamdhip64.so (ROCm's
// development link), libamdhip64.so.6, libamdhip64.so.5.
std::vector<std::string> RuntimeLibraryNames();

// Loads the first of `names` that opens, binds the table and calls hipInit(0). Unavailable
// with what to install when none opens, a symbol is missing, or there is no usable AMD GPU
// (hipInit or hipGetDeviceCount fail, or no device). Not cached: LoadHipRuntime caches.
Result<const Api*> LoadHipRuntimeFrom(const std::vector<std::string>& names);

// LoadHipRuntimeFrom(RuntimeLibraryNames()), once per process.
Result<const Api*> LoadHipRuntime();

// "hipErrorNoDevice (no ROCm-capable device is detected)".
std::string ErrorText(const Api& api, Error error);

// What to do when there is no HIP runtime or no AMD GPU: ROCm, the GPUs it supports.
std::string HowToInstallRocm();

}  // namespace hip
}  // namespace kforge

#endif  // KFORGE_BACKEND_HIP_HIP_RUNTIME_H_
