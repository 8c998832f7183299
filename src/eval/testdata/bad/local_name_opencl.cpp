// A candidate with its kernel in a raw string whose OpenCL C does not build: `local` (an
// address space qualifier) as a variable name, on line 11 of this file.
#include "kforge_opencl.h"

namespace {
const char kSource[] = R"CLC(
__kernel void scale(__global const float* x, __global float* y, float s, float b, long n) {
  long i = get_global_id(0);
  if (i >= n) return;
  float v = s * x[i];
  float local = v + b;
  y[i] = local;
}
)CLC";
}  // namespace

KF_EXPORT int kf_cl_run(const kf_cl_args* a) {
  cl_kernel k = a->kernel(a, kSource, "", "scale");
  if (!k) return 1;
  cl_mem x = kf_cl_input(a, "x"), y = kf_cl_output(a, "y");
  float s = kf_cl_attr_f(a, "scale"), b = kf_cl_attr_f(a, "shift");
  cl_long n = kf_cl_attr_i(a, "n");
  KF_CL_CHECK(a, clSetKernelArg(k, 0, sizeof(cl_mem), &x));
  KF_CL_CHECK(a, clSetKernelArg(k, 1, sizeof(cl_mem), &y));
  KF_CL_CHECK(a, clSetKernelArg(k, 2, sizeof(float), &s));
  KF_CL_CHECK(a, clSetKernelArg(k, 3, sizeof(float), &b));
  KF_CL_CHECK(a, clSetKernelArg(k, 4, sizeof(cl_long), &n));
  size_t global = (size_t)(n + 63) / 64 * 64;
  KF_CL_CHECK(a, clEnqueueNDRangeKernel(a->queue, k, 1, NULL, &global, NULL, 0, NULL, NULL));
  return 0;
}
