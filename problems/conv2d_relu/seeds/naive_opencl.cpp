// Naive `conv2d_relu` host code for the opencl backend: an out_width x out_height x
// (batch * out_channels) grid of work-items, default work-group.
#include "kforge_opencl.h"

KF_EXPORT int kf_cl_run(const kf_cl_args* a) {
  cl_kernel kernel = a->kernel(a, a->program_source, nullptr, "conv2d_relu");
  if (kernel == nullptr) return 1;
  cl_mem x = kf_cl_input(a, "x");
  cl_mem weight = kf_cl_input(a, "weight");
  cl_mem bias = kf_cl_input(a, "bias");
  cl_mem y = kf_cl_output(a, "y");
  const cl_int batch = static_cast<cl_int>(kf_cl_attr_i(a, "batch"));
  const cl_int in_c = static_cast<cl_int>(kf_cl_attr_i(a, "in_channels"));
  const cl_int out_c = static_cast<cl_int>(kf_cl_attr_i(a, "out_channels"));
  const cl_int h = static_cast<cl_int>(kf_cl_attr_i(a, "height"));
  const cl_int w = static_cast<cl_int>(kf_cl_attr_i(a, "width"));
  const cl_int k = static_cast<cl_int>(kf_cl_attr_i(a, "kernel"));
  const cl_mem buffers[4] = {x, weight, bias, y};
  for (cl_uint i = 0; i < 4; ++i)
    KF_CL_CHECK(a, clSetKernelArg(kernel, i, sizeof(cl_mem), &buffers[i]));
  const cl_int ints[6] = {batch, in_c, out_c, h, w, k};
  for (cl_uint i = 0; i < 6; ++i)
    KF_CL_CHECK(a, clSetKernelArg(kernel, 4 + i, sizeof(cl_int), &ints[i]));
  const size_t global[3] = {static_cast<size_t>(w - k + 1), static_cast<size_t>(h - k + 1),
                            static_cast<size_t>(batch) * out_c};
  KF_CL_CHECK(a, clEnqueueNDRangeKernel(a->queue, kernel, 3, nullptr, global, nullptr, 0, nullptr,
                                        nullptr));
  return 0;
}
