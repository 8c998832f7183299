// Naive `gelu` for the hip backend: one thread per element, exact erf GELU.
#include "kforge_hip.h"

__global__ void gelu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  long long n = kf_hip_attr_i(a, "n");
  if (n == 0) return 0;
  gelu<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (float*)kf_hip_output(a, "y")->data, n);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
