// Optimized `gemm_bias_relu` host code for the vulkan backend: each invocation computes a 4 x 4
// block of y in registers, reading x and weight rows as vec4 along in_features (8 vec4 loads
// feed 64 FMAs); no shared memory, so no barriers (which lavapipe runs slowly).
//
// Tunables (kforge optimize): KF_LOCAL_X, KF_LOCAL_Y (the work-group, in 4 x 4 blocks).
#include "kforge_vulkan.h"

#define KF_LOCAL_X 8  // kforge:tune [4, 8, 16]
#define KF_LOCAL_Y 8  // kforge:tune [1, 2, 4, 8]

struct Push {
  uint32_t m, k, n;
  float scale;
};

KF_EXPORT int kf_vk_run(const kf_vk_args* a) {
  const uint32_t spec[2] = {KF_LOCAL_X, KF_LOCAL_Y};
  kf_vk_pipeline* p = a->pipeline(a, spec, 2);
  if (p == nullptr) return 1;
  const Push push{static_cast<uint32_t>(kf_vk_attr_i(a, "batch")), static_cast<uint32_t>(kf_vk_attr_i(a, "in_features")),
                  static_cast<uint32_t>(kf_vk_attr_i(a, "out_features")), static_cast<float>(1)};
  kf_vk_buffer* bufs[] = {kf_vk_input(a, "x"), kf_vk_input(a, "weight"), kf_vk_input(a, "bias"), kf_vk_output(a, "y"), kf_vk_input(a, "x"), kf_vk_input(a, "weight")};
  const uint32_t blocks_x = (push.n + 3) / 4, blocks_y = (push.m + 3) / 4;
  return a->dispatch(a, p, bufs, sizeof bufs / sizeof bufs[0], &push, sizeof push, (blocks_x + spec[0] - 1) / spec[0],
                     (blocks_y + spec[1] - 1) / spec[1], 1);
}
