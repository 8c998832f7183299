// Optimized `gelu` host code for the vulkan backend: each invocation does 4 consecutive
// elements (one vec4 load and store where the tensor holds whole vec4s, a scalar tail
// otherwise), 256 invocations per work-group.
//
// Tunables (kforge optimize): KF_LOCAL (the work-group size).
#include "kforge_vulkan.h"

#define KF_LOCAL 256  // kforge:tune [64, 128, 256, 512]

KF_EXPORT int kf_vk_run(const kf_vk_args* a) {
  const uint32_t local = KF_LOCAL;
  kf_vk_pipeline* p = a->pipeline(a, &local, 1);
  if (p == nullptr) return 1;
  const uint32_t n = static_cast<uint32_t>(kf_vk_attr_i(a, "n"));
  const uint32_t quads = (n + 3) / 4;
  kf_vk_buffer* x = kf_vk_input(a, "x");
  kf_vk_buffer* y = kf_vk_output(a, "y");
  kf_vk_buffer* bufs[] = {x, y, x, y};  // bindings 2 and 3 view the same buffers as vec4s
  return a->dispatch(a, p, bufs, 4, &n, sizeof n, (quads + local - 1) / local, 1, 1);
}
