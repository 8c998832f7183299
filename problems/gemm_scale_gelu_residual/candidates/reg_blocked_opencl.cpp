// Optimized `gemm_scale_gelu_residual` host code for the opencl backend: register-blocked dot
// products (see .cl). Work-item (u, v) computes batch rows [v*RM, v*RM + RM) and output features
// [u*RN, u*RN + RN); the grid is rounded up to whole work-groups and the kernel skips blocks
// past the edges.
//
// Tunables (kforge optimize): KF_RM x KF_RN, the block of one work-item (RM * RN float8
// accumulators; the kernel handles any block and any size), and KF_GROUP_FEATURES, the
// work-items of a group along out_features (the group is KF_GROUP_FEATURES x 2).
#include <cstdio>

#include "kforge_opencl.h"

// Tuned on PoCL (CPU): of the blocks tried (2..6 rows x 2..6 features), 4 x 3 was fastest;
// its 12 float8 accumulators leave 4 of the 16 AVX registers for operands.
#define KF_RM 4  // kforge:tune [2, 3, 4, 5, 6]
#define KF_RN 3  // kforge:tune [2, 3, 4, 5, 6]
#define KF_GROUP_FEATURES 8  // kforge:tune [2, 4, 8, 16, 32]

namespace {
constexpr int kRowsPerItem = KF_RM;                   // RM
constexpr int kFeaturesPerItem = KF_RN;               // RN
constexpr size_t kGroupFeatures = KF_GROUP_FEATURES;  // work-items per group along out_features
constexpr size_t kGroupRows = 2;                      // work-items per group along batch
static_assert(kRowsPerItem >= 1 && kFeaturesPerItem >= 1 && kGroupFeatures * kGroupRows <= 256,
              "bad tunables");
}  // namespace

KF_EXPORT int kf_cl_run(const kf_cl_args* a) {
  char options[64];
  std::snprintf(options, sizeof options, "-DRM=%d -DRN=%d", kRowsPerItem, kFeaturesPerItem);
  cl_kernel k = a->kernel(a, a->program_source, options, "gemm_scale_gelu_residual_blocked");
  if (k == nullptr) return 1;
  cl_mem x = kf_cl_input(a, "x");
  cl_mem weight = kf_cl_input(a, "weight");
  cl_mem bias = kf_cl_input(a, "bias");
  cl_mem residual = kf_cl_input(a, "residual");
  cl_mem y = kf_cl_output(a, "y");
  const cl_int batch = static_cast<cl_int>(kf_cl_attr_i(a, "batch"));
  const cl_int in = static_cast<cl_int>(kf_cl_attr_i(a, "in_features"));
  const cl_int out = static_cast<cl_int>(kf_cl_attr_i(a, "out_features"));
  const cl_float scale = static_cast<cl_float>(kf_cl_attr_f(a, "scale"));
  KF_CL_CHECK(a, clSetKernelArg(k, 0, sizeof(cl_mem), &x));
  KF_CL_CHECK(a, clSetKernelArg(k, 1, sizeof(cl_mem), &weight));
  KF_CL_CHECK(a, clSetKernelArg(k, 2, sizeof(cl_mem), &bias));
  KF_CL_CHECK(a, clSetKernelArg(k, 3, sizeof(cl_mem), &residual));
  KF_CL_CHECK(a, clSetKernelArg(k, 4, sizeof(cl_mem), &y));
  KF_CL_CHECK(a, clSetKernelArg(k, 5, sizeof(cl_int), &batch));
  KF_CL_CHECK(a, clSetKernelArg(k, 6, sizeof(cl_int), &in));
  KF_CL_CHECK(a, clSetKernelArg(k, 7, sizeof(cl_int), &out));
  KF_CL_CHECK(a, clSetKernelArg(k, 8, sizeof(cl_float), &scale));
  const size_t items_out = (static_cast<size_t>(out) + kFeaturesPerItem - 1) / kFeaturesPerItem;
  const size_t items_batch = (static_cast<size_t>(batch) + kRowsPerItem - 1) / kRowsPerItem;
  const size_t local[2] = {kGroupFeatures, kGroupRows};
  const size_t global[2] = {(items_out + kGroupFeatures - 1) / kGroupFeatures * kGroupFeatures,
                            (items_batch + kGroupRows - 1) / kGroupRows * kGroupRows};
  KF_CL_CHECK(a,
              clEnqueueNDRangeKernel(a->queue, k, 2, nullptr, global, local, 0, nullptr, nullptr));
  return 0;
}
