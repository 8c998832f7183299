// The Vulkan API as a table of function pointers, loaded at run time from libvulkan.so.1 (the
// Khronos loader), so that kforge builds and runs where Vulkan is absent and says how to get it.
//
// Only the vulkan backend's device uses this; the orchestrator never loads Vulkan.
// Thread-safety: LoadVulkan() is safe to call from any thread; the table is immutable after.
#ifndef KFORGE_BACKEND_VULKAN_VULKAN_API_H_
#define KFORGE_BACKEND_VULKAN_VULKAN_API_H_

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "kforge/status.h"

namespace kforge {

// Every entry point the device calls; all are resolved through vkGetInstanceProcAddr.
// clang-format off
#define KF_VK_INSTANCE_FUNCTIONS(X)                                                          \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)        \
  X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceQueueFamilyProperties)              \
  X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice) X(vkDestroyDevice)                \
  X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements)  \
  X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory)  \
  X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers)                 \
  X(vkResetCommandBuffer) X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkQueueSubmit)     \
  X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences)                     \
  X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkGetQueryPoolResults) X(vkCmdResetQueryPool) \
  X(vkCmdWriteTimestamp) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer)       \
  X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) X(vkCmdDispatch)     \
  X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateDescriptorSetLayout)            \
  X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)       \
  X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreateDescriptorPool)                 \
  X(vkDestroyDescriptorPool) X(vkResetDescriptorPool) X(vkAllocateDescriptorSets)            \
  X(vkUpdateDescriptorSets) X(vkDeviceWaitIdle)
// clang-format on

struct VulkanApi {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  PFN_vkCreateInstance vkCreateInstance = nullptr;
  VkInstance instance = VK_NULL_HANDLE;  // one per process, never destroyed
  uint32_t api_version = 0;              // the instance's (VK_MAKE_API_VERSION)
#define KF_VK_DECLARE(name) PFN_##name name = nullptr;
  KF_VK_INSTANCE_FUNCTIONS(KF_VK_DECLARE)
#undef KF_VK_DECLARE
};

// Loads libvulkan.so.1 and creates the process's instance, once. Fails with a message that says
// what to install (mesa-vulkan-drivers for lavapipe on the CPU, or a GPU vendor's driver) when
// the loader, an instance, or a device is missing.
Result<const VulkanApi*> LoadVulkan();

// The physical devices, GPUs first (discrete, integrated, virtual), then the rest (lavapipe).
Result<std::vector<VkPhysicalDevice>> VulkanPhysicalDevices();

// "Vulkan error -4 (VK_ERROR_DEVICE_LOST)" style text for messages.
std::string VkResultName(VkResult r);

}  // namespace kforge

#endif  // KFORGE_BACKEND_VULKAN_VULKAN_API_H_
