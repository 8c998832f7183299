// Naive `matmul` host code for the opencl backend: an n x m grid of work-items, default
// work-group.
#include "kforge_opencl.h"

KF_EXPORT int kf_cl_run(const kf_cl_args* args) {
  cl_kernel kernel = args->kernel(args, args->program_source, nullptr, "matmul");
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
  const size_t global[2] = {static_cast<size_t>(n), static_cast<size_t>(m)};
  KF_CL_CHECK(args, clEnqueueNDRangeKernel(args->queue, kernel, 2, nullptr, global, nullptr, 0,
                                           nullptr, nullptr));
  return 0;
}
