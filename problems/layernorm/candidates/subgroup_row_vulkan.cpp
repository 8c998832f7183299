// Optimized `layernorm` host code for the vulkan backend: one work-group of one subgroup per row;
// lanes read consecutive elements, the mean and the variance are subgroup reductions.
//
// Tunables (kforge optimize): KF_SUBGROUPS (subgroups per work-group, one row per work-group).
#include "kforge_vulkan.h"

#define KF_SUBGROUPS 1  // kforge:tune [1, 2, 4, 8]

struct Push {
  uint32_t rows, cols;
  float eps;
};

KF_EXPORT int kf_vk_run(const kf_vk_args* a) {
  const uint32_t lanes = a->limits.subgroup_size ? a->limits.subgroup_size : 32;
  const uint32_t local = lanes * KF_SUBGROUPS;
  if (local > a->limits.max_workgroup_invocations || KF_SUBGROUPS > 32) return kf_vk_fail(a, "work-group too large");
  kf_vk_pipeline* p = a->pipeline(a, &local, 1);
  if (p == nullptr) return 1;
  const Push push{static_cast<uint32_t>(kf_vk_attr_i(a, "rows")), static_cast<uint32_t>(kf_vk_attr_i(a, "cols")),
                  static_cast<float>(kf_vk_attr_f(a, "eps"))};
  kf_vk_buffer* bufs[] = {kf_vk_input(a, "x"), kf_vk_input(a, "weight"), kf_vk_input(a, "bias"), kf_vk_output(a, "y")};
  return a->dispatch(a, p, bufs, sizeof bufs / sizeof bufs[0], &push, sizeof push, push.rows, 1, 1);
}
