// Naive `matmul` host code for the vulkan backend: one invocation per output element.
#include "kforge_vulkan.h"

struct Push {
  uint32_t m, k, n;
  float scale;
};

KF_EXPORT int kf_vk_run(const kf_vk_args* a) {
  const uint32_t tile = 16;
  const uint32_t spec[2] = {tile, tile};  // the work-group is tile x tile
  kf_vk_pipeline* p = a->pipeline(a, spec, 2);
  if (p == nullptr) return 1;
  const Push push{static_cast<uint32_t>(kf_vk_attr_i(a, "m")), static_cast<uint32_t>(kf_vk_attr_i(a, "k")),
                  static_cast<uint32_t>(kf_vk_attr_i(a, "n")), static_cast<float>(1)};
  kf_vk_buffer* bufs[] = {kf_vk_input(a, "a"), kf_vk_input(a, "b"), kf_vk_output(a, "c")};
  return a->dispatch(a, p, bufs, sizeof bufs / sizeof bufs[0], &push, sizeof push, (push.n + tile - 1) / tile,
                     (push.m + tile - 1) / tile, 1);
}
