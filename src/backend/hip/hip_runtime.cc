// Loading the HIP runtime: dlopen of libamdhip64, dlsym of each entry point, hipInit, and a
// device count. Every failure on the way is Unavailable with what to install or check.
#include "backend/hip/hip_runtime.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace kforge {
namespace hip {

namespace {

template <typename Fn>
void Bind(void* lib, Fn* slot, std::initializer_list<const char*> names, std::string* missing) {
  for (const char* name : names) {
    if (void* p = dlsym(lib, name)) {
      *slot = reinterpret_cast<Fn>(p);
      return;
    }
  }
  if (missing->empty()) *missing = *names.begin();
}

Status BindAll(void* lib, const std::string& file, Api* a) {
  std::string missing;
  Bind(lib, &a->Init, {"hipInit"}, &missing);
  Bind(lib, &a->DriverGetVersion, {"hipDriverGetVersion"}, &missing);
  Bind(lib, &a->RuntimeGetVersion, {"hipRuntimeGetVersion"}, &missing);
  Bind(lib, &a->GetDeviceCount, {"hipGetDeviceCount"}, &missing);
  Bind(lib, &a->SetDevice, {"hipSetDevice"}, &missing);
  Bind(lib, &a->DeviceGetAttribute, {"hipDeviceGetAttribute"}, &missing);
  // ROCm 6 changed hipDeviceProp_t and keeps the ROCm 5 layout under the R0000 name.
  Bind(lib, &a->GetDeviceProperties, {"hipGetDevicePropertiesR0000", "hipGetDeviceProperties"},
       &missing);
  Bind(lib, &a->DeviceSynchronize, {"hipDeviceSynchronize"}, &missing);
  Bind(lib, &a->StreamCreate, {"hipStreamCreate"}, &missing);
  Bind(lib, &a->StreamDestroy, {"hipStreamDestroy"}, &missing);
  Bind(lib, &a->EventCreate, {"hipEventCreate"}, &missing);
  Bind(lib, &a->EventDestroy, {"hipEventDestroy"}, &missing);
  Bind(lib, &a->EventRecord, {"hipEventRecord"}, &missing);
  Bind(lib, &a->EventElapsedTime, {"hipEventElapsedTime"}, &missing);
  Bind(lib, &a->Malloc, {"hipMalloc"}, &missing);
  Bind(lib, &a->Free, {"hipFree"}, &missing);
  Bind(lib, &a->Memcpy, {"hipMemcpy"}, &missing);
  Bind(lib, &a->MemcpyAsync, {"hipMemcpyAsync"}, &missing);
  Bind(lib, &a->MemsetD8Async, {"hipMemsetD8Async"}, &missing);
  Bind(lib, &a->MemsetD16Async, {"hipMemsetD16Async"}, &missing);
  Bind(lib, &a->MemsetD32Async, {"hipMemsetD32Async"}, &missing);
  Bind(lib, &a->GetErrorName, {"hipGetErrorName"}, &missing);
  Bind(lib, &a->GetErrorString, {"hipGetErrorString"}, &missing);
  if (!missing.empty())
    return Status::Unavailable(file + " lacks " + missing +
                               ": it is not a HIP runtime kforge can use; " + HowToInstallRocm());
  return Status::Ok();
}

// hipInit and hipGetDeviceCount: the runtime loads without a GPU (Debian's libamdhip64-5 is
// installed with hipcc) and says so only here.
Status CheckDevices(const Api& api, const std::string& file) {
  Error e = api.Init(0);
  int n = 0;
  Error counted = e == kSuccess ? api.GetDeviceCount(&n) : e;
  if (counted == kSuccess && n > 0) return Status::Ok();
  std::string why = counted != kSuccess ? ErrorText(api, counted) : "no device";
  return Status::Unavailable(
      "the HIP runtime (" + file + ") loads but finds no AMD GPU: " + why +
      "; check that /dev/kfd and /dev/dri/renderD* exist and are readable, that "
      "`rocminfo` lists a gfx agent, and HIP_VISIBLE_DEVICES; " +
      HowToInstallRocm());
}

}  // namespace

std::vector<std::string> RuntimeLibraryNames() {
  if (const char* v = std::getenv("KFORGE_HIP_RUNTIME"); v && *v) return {v};
  return {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
}

Result<const Api*> LoadHipRuntimeFrom(const std::vector<std::string>& names) {
  void* lib = nullptr;
  std::string file, errors;
  for (const std::string& name : names) {
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      file = name;
      break;
    }
    const char* why = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(why ? why : name.c_str());
  }
  if (!lib) return Status::Unavailable("no HIP runtime (" + errors + "): " + HowToInstallRocm());
  auto* api = new Api{};  // lives as long as the library, which is never closed
  KF_RETURN_IF_ERROR(BindAll(lib, file, api));
  KF_RETURN_IF_ERROR(CheckDevices(*api, file));
  return static_cast<const Api*>(api);
}

Result<const Api*> LoadHipRuntime() {
  static std::once_flag once;
  static Result<const Api*> loaded = Status::Internal("not loaded");
  std::call_once(once, [] { loaded = LoadHipRuntimeFrom(RuntimeLibraryNames()); });
  return loaded;
}

std::string ErrorText(const Api& api, Error error) {
  const char* name = api.GetErrorName ? api.GetErrorName(error) : nullptr;
  const char* text = api.GetErrorString ? api.GetErrorString(error) : nullptr;
  std::string s = name ? name : "HIP error " + std::to_string(error);
  if (text && (!name || std::string(text) != name)) s += std::string(" (") + text + ")";
  return s;
}

std::string HowToInstallRocm() {
  return "the hip backend needs ROCm's HIP runtime (libamdhip64) and an AMD GPU it supports: on "
         "Debian 12 `apt-get install libamdhip64-5` (ROCm 5.2: Instinct MI50/MI100/MI200 = "
         "gfx906/gfx908/"
         "gfx90a, Radeon RX 6800-6900 / PRO W6800 = gfx1030); MI300 (gfx942) and Radeon RX 7000 "
         "(gfx1100) "
         "need ROCm 6 from repo.radeon.com (see docs/abi-hip.md); or use another backend";
}

}  // namespace hip
}  // namespace kforge
