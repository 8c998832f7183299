// Optimized `layernorm` host code for the opencl backend: one work-item per row with float8
// passes (see .cl), kRowsPerGroup rows per work-group; the global size is padded to whole
// groups and the kernel skips rows past the end.
//
// Tunables (kforge optimize): KF_ROWS_PER_GROUP (the work-group size) here, and KF_ACCS (float8
// accumulators per reduction) in the .cl.
#include "kforge_opencl.h"

#define KF_ROWS_PER_GROUP 8  // kforge:tune [1, 2, 4, 8, 16, 32]

namespace {
constexpr size_t kRowsPerGroup = KF_ROWS_PER_GROUP;
static_assert(kRowsPerGroup >= 1 && kRowsPerGroup <= 256, "bad tunable");
}  // namespace

KF_EXPORT int kf_cl_run(const kf_cl_args* a) {
  cl_kernel k = a->kernel(a, a->program_source, nullptr, "layernorm_rows_vec");
  if (k == nullptr) return 1;
  cl_mem x = kf_cl_input(a, "x");
  cl_mem weight = kf_cl_input(a, "weight");
  cl_mem bias = kf_cl_input(a, "bias");
  cl_mem y = kf_cl_output(a, "y");
  const cl_int rows = static_cast<cl_int>(kf_cl_attr_i(a, "rows"));
  const cl_int cols = static_cast<cl_int>(kf_cl_attr_i(a, "cols"));
  const cl_float eps = static_cast<cl_float>(kf_cl_attr_f(a, "eps"));
  KF_CL_CHECK(a, clSetKernelArg(k, 0, sizeof(cl_mem), &x));
  KF_CL_CHECK(a, clSetKernelArg(k, 1, sizeof(cl_mem), &weight));
  KF_CL_CHECK(a, clSetKernelArg(k, 2, sizeof(cl_mem), &bias));
  KF_CL_CHECK(a, clSetKernelArg(k, 3, sizeof(cl_mem), &y));
  KF_CL_CHECK(a, clSetKernelArg(k, 4, sizeof(cl_int), &rows));
  KF_CL_CHECK(a, clSetKernelArg(k, 5, sizeof(cl_int), &cols));
  KF_CL_CHECK(a, clSetKernelArg(k, 6, sizeof(cl_float), &eps));
  const size_t local = kRowsPerGroup;
  const size_t global = (static_cast<size_t>(rows) + local - 1) / local * local;
  KF_CL_CHECK(
      a, clEnqueueNDRangeKernel(a->queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr));
  return 0;
}
