// Loading the CUDA driver: dlopen("libcuda.so.1"), then dlsym of each entry point by its
// exported (versioned) name, then cuInit. A missing optional symbol is a null entry; a missing
// required one makes the driver unusable with a message naming it.
#include "backend/cuda/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

namespace kforge {
namespace cu {

namespace {

template <typename Fn>
bool Bind(void* lib, Fn* slot, std::initializer_list<const char*> names, std::string* missing) {
  for (const char* name : names) {
    if (void* p = dlsym(lib, name)) {
      *slot = reinterpret_cast<Fn>(p);
      return true;
    }
  }
  if (missing->empty()) *missing = *names.begin();
  return false;
}

Status BindAll(void* lib, Api* a) {
  std::string missing;
  Bind(lib, &a->Init, {"cuInit"}, &missing);
  Bind(lib, &a->DriverGetVersion, {"cuDriverGetVersion"}, &missing);
  Bind(lib, &a->DeviceGetCount, {"cuDeviceGetCount"}, &missing);
  Bind(lib, &a->DeviceGet, {"cuDeviceGet"}, &missing);
  Bind(lib, &a->DeviceGetName, {"cuDeviceGetName"}, &missing);
  Bind(lib, &a->DeviceGetAttribute, {"cuDeviceGetAttribute"}, &missing);
  Bind(lib, &a->DeviceTotalMem, {"cuDeviceTotalMem_v2"}, &missing);
  Bind(lib, &a->DevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, &missing);
  Bind(lib, &a->DevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, &missing);
  Bind(lib, &a->CtxSetCurrent, {"cuCtxSetCurrent"}, &missing);
  Bind(lib, &a->CtxSynchronize, {"cuCtxSynchronize"}, &missing);
  Bind(lib, &a->CtxSetLimit, {"cuCtxSetLimit"}, &missing);
  Bind(lib, &a->CtxResetPersistingL2Cache, {"cuCtxResetPersistingL2Cache"}, &missing);
  Bind(lib, &a->StreamCreate, {"cuStreamCreate"}, &missing);
  Bind(lib, &a->StreamDestroy, {"cuStreamDestroy_v2"}, &missing);
  Bind(lib, &a->StreamSynchronize, {"cuStreamSynchronize"}, &missing);
  Bind(lib, &a->StreamSetAttribute, {"cuStreamSetAttribute"}, &missing);
  Bind(lib, &a->EventCreate, {"cuEventCreate"}, &missing);
  Bind(lib, &a->EventDestroy, {"cuEventDestroy_v2"}, &missing);
  Bind(lib, &a->EventRecord, {"cuEventRecord"}, &missing);
  Bind(lib, &a->EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &missing);
  Bind(lib, &a->MemAlloc, {"cuMemAlloc_v2"}, &missing);
  Bind(lib, &a->MemFree, {"cuMemFree_v2"}, &missing);
  Bind(lib, &a->MemcpyHtoD, {"cuMemcpyHtoD_v2"}, &missing);
  Bind(lib, &a->MemcpyDtoH, {"cuMemcpyDtoH_v2"}, &missing);
  Bind(lib, &a->MemHostRegister, {"cuMemHostRegister_v2"}, &missing);
  Bind(lib, &a->MemHostUnregister, {"cuMemHostUnregister"}, &missing);
  Bind(lib, &a->MemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, &missing);
  Bind(lib, &a->MemsetD8Async, {"cuMemsetD8Async"}, &missing);
  Bind(lib, &a->MemsetD16Async, {"cuMemsetD16Async"}, &missing);
  Bind(lib, &a->MemsetD32Async, {"cuMemsetD32Async"}, &missing);
  Bind(lib, &a->ModuleLoadData, {"cuModuleLoadData"}, &missing);
  Bind(lib, &a->ModuleGetFunction, {"cuModuleGetFunction"}, &missing);
  Bind(lib, &a->LaunchKernel, {"cuLaunchKernel"}, &missing);
  Bind(lib, &a->GetErrorName, {"cuGetErrorName"}, &missing);
  Bind(lib, &a->GetErrorString, {"cuGetErrorString"}, &missing);
  if (!missing.empty())
    return Status::Unavailable("the NVIDIA driver's libcuda.so.1 lacks " + missing +
                               ": it is too old; install a driver that supports CUDA 12.8 or newer");
  return Status::Ok();
}

Result<const Api*> Load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return Status::Unavailable(
        std::string("no NVIDIA driver (libcuda.so.1 not found: ") + (why ? why : "?") +
        "): install the NVIDIA driver (e.g. `apt-get install nvidia-driver` or the CUDA "
        "repository's cuda-drivers) on a machine with an NVIDIA GPU, or use another backend");
  }
  static Api api{};
  KF_RETURN_IF_ERROR(BindAll(lib, &api));
  Result_t e = api.Init(0);
  if (e != kSuccess)
    return Status::Unavailable("the NVIDIA driver is installed but cuInit failed: " + ErrorText(api, e) +
                               "; check `nvidia-smi` (no GPU visible, CUDA_VISIBLE_DEVICES, or a "
                               "driver/kernel-module version mismatch)");
  return static_cast<const Api*>(&api);
}

}  // namespace

Result<const Api*> LoadCudaDriver() {
  static std::once_flag once;
  static Result<const Api*> loaded = Status::Internal("not loaded");
  std::call_once(once, [] { loaded = Load(); });
  return loaded;
}

std::string ErrorText(const Api& api, Result_t error) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.GetErrorName) api.GetErrorName(error, &name);
  if (api.GetErrorString) api.GetErrorString(error, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(error);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

}  // namespace cu
}  // namespace kforge
