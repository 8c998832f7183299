// Stale output: a `scale` kernel (y = scale * x + shift) that writes only the first half of y;
// the rest keeps the poison.
#include "kforge_hip.h"

__global__ void scale_kernel(const float* x, float* y, float s, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n / 2) y[i] = s * x[i] + b;
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  long long n = kf_hip_attr_i(a, "n");
  float s = (float)kf_hip_attr_f(a, "scale"), b = (float)kf_hip_attr_f(a, "shift");
  const float* x = (const float*)kf_hip_input(a, "x")->data;
  float* y = (float*)kf_hip_output(a, "y")->data;
  scale_kernel<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>(x, y, s, b, n);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
