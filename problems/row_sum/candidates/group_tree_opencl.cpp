// `row_sum` host code for the opencl backend: one work-group of kGroup work-items per row with
// a local-memory tree reduction (see .cl).
//
// Tunables (kforge optimize): KF_GROUP (the work-group size, a power of two from 8 to 256,
// passed to the kernel as GROUP) here, and KF_VEC (floats per load) in the .cl.
#include <cstdio>

#include "kforge_opencl.h"

#define KF_GROUP 64  // kforge:tune [16, 32, 64, 128, 256]

namespace {
constexpr int kGroup = KF_GROUP;
static_assert(kGroup >= 8 && kGroup <= 256 && (kGroup & (kGroup - 1)) == 0,
              "KF_GROUP must be a power of two from 8 to 256");
}  // namespace

KF_EXPORT int kf_cl_run(const kf_cl_args* a) {
  char options[32];
  std::snprintf(options, sizeof options, "-DGROUP=%d", kGroup);
  cl_kernel k = a->kernel(a, a->program_source, options, "row_sum_tree");
  if (k == nullptr) return 1;
  cl_mem x = kf_cl_input(a, "x");
  cl_mem y = kf_cl_output(a, "y");
  const cl_int rows = static_cast<cl_int>(kf_cl_attr_i(a, "rows"));
  const cl_int cols = static_cast<cl_int>(kf_cl_attr_i(a, "cols"));
  KF_CL_CHECK(a, clSetKernelArg(k, 0, sizeof(cl_mem), &x));
  KF_CL_CHECK(a, clSetKernelArg(k, 1, sizeof(cl_mem), &y));
  KF_CL_CHECK(a, clSetKernelArg(k, 2, sizeof(cl_int), &rows));
  KF_CL_CHECK(a, clSetKernelArg(k, 3, sizeof(cl_int), &cols));
  const size_t local = kGroup;
  const size_t global = static_cast<size_t>(rows) * local;
  KF_CL_CHECK(
      a, clEnqueueNDRangeKernel(a->queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr));
  return 0;
}
