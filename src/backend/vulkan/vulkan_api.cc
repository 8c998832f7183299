// Loads the Vulkan loader with dlopen and resolves the table through vkGetInstanceProcAddr.
#include "backend/vulkan/vulkan_api.h"

// Vulkan structures are value-initialised from their sType ({VK_STRUCTURE_TYPE_...}), on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

namespace kforge {

namespace {

const char kHowToFix[] =
    "install a Vulkan driver: `apt-get install libvulkan1 mesa-vulkan-drivers` gives lavapipe "
    "(Vulkan on the CPU); for a GPU install its vendor's driver, and check that "
    "/usr/share/vulkan/icd.d (or VK_DRIVER_FILES / VK_ICD_FILENAMES) names it";

Result<VulkanApi*> Load() {
  auto* api = new VulkanApi;  // lives for the process: the driver may keep pointers into it
  void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return Status::Unavailable(std::string("cannot load the Vulkan loader libvulkan.so.1 (") +
                               dlerror() + "); " + kHowToFix);
  api->vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!api->vkGetInstanceProcAddr)
    return Status::Unavailable("libvulkan.so.1 exports no vkGetInstanceProcAddr; " +
                               std::string(kHowToFix));
  api->vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(
      api->vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
  auto version = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      api->vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion"));
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (version) version(&loader_version);
  if (loader_version < VK_API_VERSION_1_1)
    return Status::Unavailable("the Vulkan loader is older than 1.1; kforge needs Vulkan 1.1; " +
                               std::string(kHowToFix));
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kforge";
  app.apiVersion = api->api_version = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkResult r = api->vkCreateInstance(&info, nullptr, &api->instance);
  if (r != VK_SUCCESS)
    return Status::Unavailable("vkCreateInstance failed: " + VkResultName(r) +
                               " (no Vulkan driver found?); " + kHowToFix);
#define KF_VK_RESOLVE(name)                                                                   \
  api->name = reinterpret_cast<PFN_##name>(api->vkGetInstanceProcAddr(api->instance, #name)); \
  if (!api->name)                                                                             \
    return Status::Unavailable("the Vulkan loader lacks " #name "; " + std::string(kHowToFix));
  KF_VK_INSTANCE_FUNCTIONS(KF_VK_RESOLVE)
#undef KF_VK_RESOLVE
  return api;
}

int TypeRank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    default:
      return 3;
  }
}

}  // namespace

Result<const VulkanApi*> LoadVulkan() {
  static std::once_flag once;
  static Result<VulkanApi*> loaded = Status::Unavailable("not loaded");
  std::call_once(once, [] { loaded = Load(); });
  if (!loaded.ok()) return loaded.status();
  return static_cast<const VulkanApi*>(*loaded);
}

Result<std::vector<VkPhysicalDevice>> VulkanPhysicalDevices() {
  KF_ASSIGN_OR_RETURN(const VulkanApi* vk, LoadVulkan());
  uint32_t n = 0;
  VkResult r = vk->vkEnumeratePhysicalDevices(vk->instance, &n, nullptr);
  if (r != VK_SUCCESS || n == 0)
    return Status::Unavailable("the Vulkan loader found no device (" + VkResultName(r) + "); " +
                               kHowToFix);
  std::vector<VkPhysicalDevice> devices(n);
  vk->vkEnumeratePhysicalDevices(vk->instance, &n, devices.data());
  devices.resize(n);
  std::stable_sort(devices.begin(), devices.end(), [vk](VkPhysicalDevice a, VkPhysicalDevice b) {
    VkPhysicalDeviceProperties pa, pb;
    vk->vkGetPhysicalDeviceProperties(a, &pa);
    vk->vkGetPhysicalDeviceProperties(b, &pb);
    return TypeRank(pa.deviceType) < TypeRank(pb.deviceType);
  });
  return devices;
}

std::string VkResultName(VkResult r) {
  const char* name = "";
  switch (r) {
    case VK_SUCCESS:
      name = "VK_SUCCESS";
      break;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      name = "VK_ERROR_OUT_OF_HOST_MEMORY";
      break;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      name = "VK_ERROR_OUT_OF_DEVICE_MEMORY";
      break;
    case VK_ERROR_INITIALIZATION_FAILED:
      name = "VK_ERROR_INITIALIZATION_FAILED";
      break;
    case VK_ERROR_DEVICE_LOST:
      name = "VK_ERROR_DEVICE_LOST";
      break;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      name = "VK_ERROR_INCOMPATIBLE_DRIVER";
      break;
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      name = "VK_ERROR_EXTENSION_NOT_PRESENT";
      break;
    case VK_ERROR_FEATURE_NOT_PRESENT:
      name = "VK_ERROR_FEATURE_NOT_PRESENT";
      break;
    case VK_ERROR_TOO_MANY_OBJECTS:
      name = "VK_ERROR_TOO_MANY_OBJECTS";
      break;
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      name = "VK_ERROR_OUT_OF_POOL_MEMORY";
      break;
    case VK_ERROR_INVALID_SHADER_NV:
      name = "VK_ERROR_INVALID_SHADER_NV";
      break;
    case VK_TIMEOUT:
      name = "VK_TIMEOUT";
      break;
    default:
      break;
  }
  return "Vulkan error " + std::to_string(static_cast<int>(r)) +
         (*name ? std::string(" (") + name + ")" : "");
}

}  // namespace kforge
