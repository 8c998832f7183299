// Does not compile (Vulkan): the shader uses an undeclared name.
#include "kforge_vulkan.h"

struct Push {
  float s, b;
  uint32_t n;
};

KF_EXPORT int kf_vk_run(const kf_vk_args* a) {
  const uint32_t local = 64;
  kf_vk_pipeline* p = a->pipeline(a, &local, 1);
  if (!p) return 1;
  Push push{(float)kf_vk_attr_f(a, "scale"), (float)kf_vk_attr_f(a, "shift"), (uint32_t)kf_vk_attr_i(a, "n")};
  kf_vk_buffer* bufs[] = {kf_vk_input(a, "x"), kf_vk_output(a, "y")};
  return a->dispatch(a, p, bufs, 2, &push, sizeof push, (push.n + local - 1) / local, 1, 1);
}
