// `matmul` host code for the opencl backend: local-memory tiles (see .cl). The grid covers C
// in kTile x kTile tiles, rounded up; the kernel guards the edges.
//
// Tunables (kforge optimize): KF_TILE, the tile edge (TS), and KF_GROUP_ROWS, the work-items of
// a group along m; each work-item computes KF_TILE / KF_GROUP_ROWS rows of C (WPT). Every
// combination of the listed values is valid: KF_GROUP_ROWS divides KF_TILE, the group has at
// most 32 x 8 = 256 work-items, and the two tiles take at most 8 KiB of local memory.
#include <cstdio>

#include "kforge_opencl.h"

#define KF_TILE 32  // kforge:tune [8, 16, 32]
#define KF_GROUP_ROWS 8  // kforge:tune [1, 2, 4, 8]

namespace {
constexpr int kTile = KF_TILE;                         // TS: tile edge in elements
constexpr int kRowsPerItem = KF_TILE / KF_GROUP_ROWS;  // WPT: rows of C per work-item
static_assert(KF_GROUP_ROWS >= 1 && KF_TILE % KF_GROUP_ROWS == 0,
              "KF_GROUP_ROWS must divide KF_TILE");
static_assert(KF_TILE * KF_GROUP_ROWS <= 256, "work-group larger than 256");
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
