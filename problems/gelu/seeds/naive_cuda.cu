// Naive `gelu` for the cuda backend: one thread per element, exact erf GELU.
#include "kforge_cuda.h"

__global__ void gelu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  long long n = kf_cuda_attr_i(a, "n");
  if (n == 0) return 0;
  gelu<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>(
      (const float*)kf_cuda_input(a, "x")->data, (float*)kf_cuda_output(a, "y")->data, n);
  KF_CUDA_CHECK_LAUNCH(a);
  return 0;
}
