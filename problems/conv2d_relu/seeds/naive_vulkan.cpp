// Naive `conv2d_relu` host code for the vulkan backend: one invocation per output element.
#include "kforge_vulkan.h"

struct Push {
  uint32_t batch, in_c, out_c, h, w, k;
};

KF_EXPORT int kf_vk_run(const kf_vk_args* a) {
  const uint32_t cols_per_invocation = 1;
  const uint32_t spec[2] = {8, 8};  // the work-group size (x: output columns, y: output rows)
  kf_vk_pipeline* p = a->pipeline(a, spec, 2);
  if (p == nullptr) return 1;
  const Push push{static_cast<uint32_t>(kf_vk_attr_i(a, "batch")), static_cast<uint32_t>(kf_vk_attr_i(a, "in_channels")),
                  static_cast<uint32_t>(kf_vk_attr_i(a, "out_channels")), static_cast<uint32_t>(kf_vk_attr_i(a, "height")),
                  static_cast<uint32_t>(kf_vk_attr_i(a, "width")), static_cast<uint32_t>(kf_vk_attr_i(a, "kernel"))};
  if (push.k > push.h || push.k > push.w) return kf_vk_fail(a, "kernel larger than the image");
  const uint32_t oh = push.h - push.k + 1, ow = push.w - push.k + 1;
  const uint32_t across = (ow + cols_per_invocation - 1) / cols_per_invocation;
  kf_vk_buffer* bufs[] = {kf_vk_input(a, "x"), kf_vk_input(a, "weight"), kf_vk_input(a, "bias"), kf_vk_output(a, "y")};
  return a->dispatch(a, p, bufs, 4, &push, sizeof push, (across + spec[0] - 1) / spec[0], (oh + spec[1] - 1) / spec[1],
                     push.batch * push.out_c);
}
