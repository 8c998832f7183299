// `matmul` host code for the opencl backend: local-memory tiles (see .cl). The grid covers C
// in kTile x kTile tiles, rounded up; the kernel guards the edges.
#include <cstdio>

#include "kforge_opencl.h"

namespace {
constexpr int kTile = 32;        // TS: tile edge in elements
constexpr int kRowsPerItem = 4;  // WPT: rows of C per work-item
}  // namespace

KF_EXPORT int kf_cl_run(const kf_cl_args* args) {
  char options[64];
  std::snprintf(options, sizeof options, "-DTS=%d -DWPT=%d", kTile, kRowsPerItem);
  cl_kernel kernel = args->kernel(args, args->program_source, options, "matmul_local_tiled");
  if (kernel == nullptr) return 1;
  cl_mem a = kf_cl_input(args, "a");
  cl_mem b = kf_cl_input(args, "b");
  cl_mem c = kf_cl_output(args, "c");
  const cl_int m = static_cast<cl_int>(kf_cl_attr_i(args, "m"));
  const cl_int k = static_cast<cl_int>(kf_cl_attr_i(args, "k"));
  const cl_int n = static_cast<cl_int>(kf_cl_attr_i(args, "n"));
  KF_CL_CHECK(args, clSetKernelArg(kernel, 0, sizeof(cl_mem), &a));
  KF_CL_CHECK(args, clSetKernelArg(kernel, 1, sizeof(cl_mem), &b));
  KF_CL_CHECK(args, clSetKernelArg(kernel, 2, sizeof(cl_mem), &c));
  KF_CL_CHECK(args, clSetKernelArg(kernel, 3, sizeof(cl_int), &m));
  KF_CL_CHECK(args, clSetKernelArg(kernel, 4, sizeof(cl_int), &k));
  KF_CL_CHECK(args, clSetKernelArg(kernel, 5, sizeof(cl_int), &n));
  const size_t tiles_n = (static_cast<size_t>(n) + kTile - 1) / kTile;
  const size_t tiles_m = (static_cast<size_t>(m) + kTile - 1) / kTile;
  const size_t local[2] = {kTile, kTile / kRowsPerItem};
  const size_t global[2] = {tiles_n * local[0], tiles_m * local[1]};
  KF_CL_CHECK(args, clEnqueueNDRangeKernel(args->queue, kernel, 2, nullptr, global, local, 0,
                                           nullptr, nullptr));
  return 0;
}
