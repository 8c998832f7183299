// Optimized `gelu` host code for the opencl backend: float8 chunks per work-item (see .cl),
// kWorkGroup work-items per group; the global size is padded to whole groups and the kernel
// skips work-items past the end.
//
// Tunables (kforge optimize): KF_VEC_PER_WI float8 vectors per work-item (passed to the kernel
// as VEC_PER_WI; the kernel handles any chunk and any tail) and KF_WORK_GROUP work-items per
// group (at most 256, so it fits GPUs as well as PoCL).
#include <cstdio>

#include "kforge_opencl.h"

#define KF_VEC_PER_WI 16  // kforge:tune [4, 8, 16, 32, 64]
#define KF_WORK_GROUP 16  // kforge:tune [4, 16, 64, 128, 256]

namespace {
constexpr int kVecPerWorkItem = KF_VEC_PER_WI;  // 128 floats per work-item by default
constexpr size_t kWorkGroup = KF_WORK_GROUP;
static_assert(kVecPerWorkItem >= 1 && kWorkGroup >= 1 && kWorkGroup <= 256, "bad tunables");
}  // namespace

KF_EXPORT int kf_cl_run(const kf_cl_args* a) {
  char options[64];
  std::snprintf(options, sizeof options, "-DVEC_PER_WI=%d", kVecPerWorkItem);
  cl_kernel k = a->kernel(a, a->program_source, options, "gelu_vec8");
  if (k == nullptr) return 1;
  cl_mem x = kf_cl_input(a, "x");
  cl_mem y = kf_cl_output(a, "y");
  const cl_int n = static_cast<cl_int>(kf_cl_attr_i(a, "n"));
  KF_CL_CHECK(a, clSetKernelArg(k, 0, sizeof(cl_mem), &x));
  KF_CL_CHECK(a, clSetKernelArg(k, 1, sizeof(cl_mem), &y));
  KF_CL_CHECK(a, clSetKernelArg(k, 2, sizeof(cl_int), &n));
  const size_t per_item = 8 * kVecPerWorkItem;
  const size_t items = (static_cast<size_t>(n) + per_item - 1) / per_item;
  const size_t global = (items + kWorkGroup - 1) / kWorkGroup * kWorkGroup;
  KF_CL_CHECK(a, clEnqueueNDRangeKernel(a->queue, k, 1, nullptr, &global, &kWorkGroup, 0, nullptr,
                                        nullptr));
  return 0;
}
