// Naive `row_sum` host code for the opencl backend: one work-item per row, default work-group.
#include "kforge_opencl.h"

KF_EXPORT int kf_cl_run(const kf_cl_args* a) {
  cl_kernel k = a->kernel(a, a->program_source, nullptr, "row_sum");
  if (k == nullptr) return 1;
  cl_mem x = kf_cl_input(a, "x");
  cl_mem y = kf_cl_output(a, "y");
  const cl_int rows = static_cast<cl_int>(kf_cl_attr_i(a, "rows"));
  const cl_int cols = static_cast<cl_int>(kf_cl_attr_i(a, "cols"));
  KF_CL_CHECK(a, clSetKernelArg(k, 0, sizeof(cl_mem), &x));
  KF_CL_CHECK(a, clSetKernelArg(k, 1, sizeof(cl_mem), &y));
  KF_CL_CHECK(a, clSetKernelArg(k, 2, sizeof(cl_int), &rows));
  KF_CL_CHECK(a, clSetKernelArg(k, 3, sizeof(cl_int), &cols));
  const size_t global = static_cast<size_t>(rows);
  KF_CL_CHECK(
      a, clEnqueueNDRangeKernel(a->queue, k, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  return 0;
}
