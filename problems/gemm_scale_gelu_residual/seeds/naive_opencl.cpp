// Naive `gemm_scale_gelu_residual` host code for the opencl backend: an out_features x batch
// grid of work-items, default work-group.
#include "kforge_opencl.h"

KF_EXPORT int kf_cl_run(const kf_cl_args* a) {
  cl_kernel k = a->kernel(a, a->program_source, nullptr, "gemm_scale_gelu_residual");
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
  const size_t global[2] = {static_cast<size_t>(out), static_cast<size_t>(batch)};
  KF_CL_CHECK(
      a, clEnqueueNDRangeKernel(a->queue, k, 2, nullptr, global, nullptr, 0, nullptr, nullptr));
  return 0;
}
