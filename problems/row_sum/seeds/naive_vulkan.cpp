// Naive `row_sum` host code for the vulkan backend: one invocation per row.
#include "kforge_vulkan.h"

KF_EXPORT int kf_vk_run(const kf_vk_args* a) {
  const uint32_t local = 64;
  kf_vk_pipeline* p = a->pipeline(a, &local, 1);
  if (p == nullptr) return 1;
  const uint32_t dims[2] = {static_cast<uint32_t>(kf_vk_attr_i(a, "rows")), static_cast<uint32_t>(kf_vk_attr_i(a, "cols"))};
  kf_vk_buffer* bufs[] = {kf_vk_input(a, "x"), kf_vk_output(a, "y")};
  return a->dispatch(a, p, bufs, 2, dims, sizeof dims, (dims[0] + local - 1) / local, 1, 1);
}
