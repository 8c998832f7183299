// How the orchestrator builds a `vulkan` candidate's shader: the sibling .comp file is compiled
// to SPIR-V by glslangValidator (in the sandbox, like every compile) into a C header, and a
// small glue file, compiled and linked with the host file, exports the words as kf_vk_spirv.
// Pure functions over names and text; nothing here loads Vulkan. Thread-safety: stateless.
#ifndef KFORGE_BACKEND_VULKAN_VULKAN_BUILD_H_
#define KFORGE_BACKEND_VULKAN_VULKAN_BUILD_H_

#include <string>
#include <vector>

namespace kforge {

// The command, run in the compile folder, that compiles GLSL compute shader `shader` (a .comp
// file there) into the C header kf_shader.h holding `const uint32_t kf_vk_shader_words[]`.
std::vector<std::string> VulkanShaderCompileArgv(const std::string& shader);

// C++ source that includes kf_shader.h and exports
// `extern "C" const uint32_t* kf_vk_spirv(uint64_t* words)`, which the device calls on Load.
const char* VulkanShaderGlue();

}  // namespace kforge

#endif  // KFORGE_BACKEND_VULKAN_VULKAN_BUILD_H_
