// `matmul` host code for the opencl backend: register-blocked float8 work-items (see .cl).
// Work-item (x, y) computes rows [y*RM, y*RM + RM) and columns [16x, 16x + 16) of C; the grid
// is rounded up to whole work-groups and the kernel skips blocks past the edges.
//
// Tunables (kforge optimize): KF_RM, the rows per work-item (RM; 2 * RM float8 accumulators,
// the kernel handles any value and any m), and the work-group shape KF_GROUP_COLS x
// KF_GROUP_ROWS (at most 32 x 4 = 128 work-items).
#include <cstdio>

#include "kforge_opencl.h"

// Tuned on PoCL (CPU): 6 rows keep 12 float8 accumulators in the 16 AVX registers.
#define KF_RM 6  // kforge:tune [2, 3, 4, 6, 8]
#define KF_GROUP_COLS 8  // kforge:tune [2, 4, 8, 16, 32]
#define KF_GROUP_ROWS 2  // kforge:tune [1, 2, 4]

namespace {
constexpr int kRowsPerItem = KF_RM;           // RM
constexpr size_t kGroupCols = KF_GROUP_COLS;  // work-items per group along n (128 columns)
constexpr size_t kGroupRows = KF_GROUP_ROWS;  // work-items per group along m (12 rows)
static_assert(kRowsPerItem >= 1 && kGroupCols * kGroupRows <= 256, "bad tunables");
}  // namespace

KF_EXPORT int kf_cl_run(const kf_cl_args* args) {
  char options[32];
  std::snprintf(options, sizeof options, "-DRM=%d", kRowsPerItem);
  cl_kernel kernel = args->kernel(args, args->program_source, options, "matmul_reg_blocked");
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
  const size_t items_n = (static_cast<size_t>(n) + 15) / 16;
  const size_t items_m = (static_cast<size_t>(m) + kRowsPerItem - 1) / kRowsPerItem;
  const size_t local[2] = {kGroupCols, kGroupRows};
  const size_t global[2] = {(items_n + kGroupCols - 1) / kGroupCols * kGroupCols,
                            (items_m + kGroupRows - 1) / kGroupRows * kGroupRows};
  KF_CL_CHECK(args, clEnqueueNDRangeKernel(args->queue, kernel, 2, nullptr, global, local, 0,
                                           nullptr, nullptr));
  return 0;
}
