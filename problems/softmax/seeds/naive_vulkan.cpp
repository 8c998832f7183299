// Naive `softmax` host code for the vulkan backend: one invocation per row.
#include "kforge_vulkan.h"

struct Push {
  uint32_t rows, cols;
  float eps;
};

KF_EXPORT int kf_vk_run(const kf_vk_args* a) {
  const uint32_t local = 64;
  kf_vk_pipeline* p = a->pipeline(a, &local, 1);
  if (p == nullptr) return 1;
  const Push push{static_cast<uint32_t>(kf_vk_attr_i(a, "rows")), static_cast<uint32_t>(kf_vk_attr_i(a, "cols")),
                  static_cast<float>(kf_vk_attr_f(a, "eps"))};
  kf_vk_buffer* bufs[] = {kf_vk_input(a, "x"), kf_vk_output(a, "y")};
  return a->dispatch(a, p, bufs, sizeof bufs / sizeof bufs[0], &push, sizeof push, (push.rows + local - 1) / local, 1, 1);
}
