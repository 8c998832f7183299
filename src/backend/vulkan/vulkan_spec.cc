// The vulkan backend: GLSL compute shaders (<stem>.comp, compiled to SPIR-V by glslangValidator
// at compile time and linked into the candidate) with a C++ host launcher that records work
// only through kforge's helpers (any Vulkan 1.1 device; lavapipe on the CPU).
#include "backend/registry.h"
#include "backend/vulkan/vulkan_build.h"

namespace kforge {

namespace {

// Vulkan launchers record work only through the ABI's helpers (pipeline, dispatch, fill), so
// that everything they do lies between kforge's timestamps and every buffer is kforge's.
std::vector<DenyRule> VulkanRules() {
  std::vector<DenyRule> r = HostRules();
  r.push_back({R"(\b(vk[A-Z]\w*|PFN_vk\w*)\b)", "calls the Vulkan API itself (record work with a->pipeline, a->dispatch and a->fill)"});
  r.push_back({R"(\bkf_vk_spirv\b|\bkf_vk_shader_words\b)", "defines the shader's SPIR-V itself (kforge compiles the sibling .comp file)"});
  return r;
}

}  // namespace

BackendSpec VulkanSpec() {
  BackendSpec b;
  b.name = "vulkan";
  b.summary = "GLSL compute shaders (SPIR-V) with a C++ host launcher (any Vulkan 1.1 device; lavapipe on the CPU)";
  b.entry = "kf_vk_run";
  b.abi_header = "kforge_vulkan.h";
  b.sibling_program_source = true;
  b.sibling_extension = ".comp";
  b.sibling_compile = VulkanShaderCompileArgv;
  b.sibling_glue = VulkanShaderGlue;
  b.deny = VulkanRules();
  b.extensions = {".cpp", ".cc"};
  b.code_languages = CppCodeLanguages();
  b.sibling_code_languages = {"glsl", "comp"};
  b.worker_env = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES", "LP_NUM_THREADS"};  // the loader's drivers; lavapipe's threads
  return b;
}

}  // namespace kforge
