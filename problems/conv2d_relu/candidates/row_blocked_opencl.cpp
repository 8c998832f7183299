// Optimized `conv2d_relu` host code for the opencl backend: row blocks of 16 outputs x OCB
// channels per work-item (see .cl). Grid: (column blocks, output rows, batch x channel
// blocks), each rounded up to whole work-groups; the kernel skips items past the edges.
//
// Tunables (kforge optimize): KF_OCB, the output channels per work-item (OCB; 2 * OCB float8
// accumulators, the kernel handles any value and any channel count), and the work-group's
// extent along the output rows (KF_GROUP_ROWS) and along batch x channel blocks (KF_GROUP_Z);
// the group is 1 x KF_GROUP_ROWS x KF_GROUP_Z, at most 64 work-items.
#include <cstdio>

#include "kforge_opencl.h"

#define KF_OCB 4  // kforge:tune [1, 2, 4, 6, 8]
#define KF_GROUP_ROWS 4  // kforge:tune [1, 2, 4, 8, 16]
#define KF_GROUP_Z 2  // kforge:tune [1, 2, 4]

namespace {
constexpr int kChannelsPerItem = KF_OCB;  // OCB
constexpr size_t kGroup[3] = {1, KF_GROUP_ROWS, KF_GROUP_Z};
static_assert(kChannelsPerItem >= 1 && KF_GROUP_ROWS * KF_GROUP_Z <= 256, "bad tunables");

size_t RoundUp(size_t v, size_t m) { return (v + m - 1) / m * m; }
}  // namespace

KF_EXPORT int kf_cl_run(const kf_cl_args* a) {
  char options[32];
  std::snprintf(options, sizeof options, "-DOCB=%d", kChannelsPerItem);
  cl_kernel kernel = a->kernel(a, a->program_source, options, "conv2d_relu_blocked");
  if (kernel == nullptr) return 1;
  const cl_mem buffers[4] = {kf_cl_input(a, "x"), kf_cl_input(a, "weight"), kf_cl_input(a, "bias"),
                             kf_cl_output(a, "y")};
  for (cl_uint i = 0; i < 4; ++i)
    KF_CL_CHECK(a, clSetKernelArg(kernel, i, sizeof(cl_mem), &buffers[i]));
  const cl_int batch = static_cast<cl_int>(kf_cl_attr_i(a, "batch"));
  const cl_int in_c = static_cast<cl_int>(kf_cl_attr_i(a, "in_channels"));
  const cl_int out_c = static_cast<cl_int>(kf_cl_attr_i(a, "out_channels"));
  const cl_int h = static_cast<cl_int>(kf_cl_attr_i(a, "height"));
  const cl_int w = static_cast<cl_int>(kf_cl_attr_i(a, "width"));
  const cl_int k = static_cast<cl_int>(kf_cl_attr_i(a, "kernel"));
  const cl_int ints[6] = {batch, in_c, out_c, h, w, k};
  for (cl_uint i = 0; i < 6; ++i)
    KF_CL_CHECK(a, clSetKernelArg(kernel, 4 + i, sizeof(cl_int), &ints[i]));
  const size_t column_blocks = (static_cast<size_t>(w - k + 1) + 15) / 16;
  const size_t channel_blocks =
      (static_cast<size_t>(out_c) + kChannelsPerItem - 1) / kChannelsPerItem;
  const size_t global[3] = {RoundUp(column_blocks, kGroup[0]),
                            RoundUp(static_cast<size_t>(h - k + 1), kGroup[1]),
                            RoundUp(static_cast<size_t>(batch) * channel_blocks, kGroup[2])};
  KF_CL_CHECK(
      a, clEnqueueNDRangeKernel(a->queue, kernel, 3, nullptr, global, kGroup, 0, nullptr, nullptr));
  return 0;
}
