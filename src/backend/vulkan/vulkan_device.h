// The `vulkan` backend's device: one Vulkan physical device through the Khronos loader
// (lavapipe on the CPU, or a GPU's driver), loaded at run time. Candidates follow
// abi/kforge_vulkan.h: a C++ host launcher and a GLSL compute shader that kforge compiled to
// SPIR-V and linked into the candidate's library.
#ifndef KFORGE_BACKEND_VULKAN_VULKAN_DEVICE_H_
#define KFORGE_BACKEND_VULKAN_VULKAN_DEVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"

namespace kforge {

// Opens device `index` in the order ListVulkanDevices() gives (GPUs first, then the rest).
// Fails with a message that says how to get a Vulkan driver when there is none.
Result<std::unique_ptr<Device>> NewVulkanDevice(int index);

// "name (type, Vulkan x.y.z)" for every device, GPUs first; an error when none is usable.
Result<std::vector<std::string>> ListVulkanDevices();

}  // namespace kforge

#endif  // KFORGE_BACKEND_VULKAN_VULKAN_DEVICE_H_
