// Cheating on purpose, openly: creates its own stream. The static check refuses it before
// anything is compiled: suspicious (gate "static").
#include "kforge_cuda.h"

__global__ void scale_kernel(const float* x, float* y, float s, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i] + b;
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  static cudaStream_t side = nullptr;
  if (!side) cudaStreamCreate(&side);
  long long n = kf_cuda_attr_i(a, "n");
  scale_kernel<<<(unsigned)((n + 255) / 256), 256, 0, side>>>(
      (const float*)kf_cuda_input(a, "x")->data, (float*)kf_cuda_output(a, "y")->data,
      (float)kf_cuda_attr_f(a, "scale"), (float)kf_cuda_attr_f(a, "shift"), n);
  cudaDeviceSynchronize();
  return 0;
}
