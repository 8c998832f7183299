// Refused by the static check: launches on a stream of its own, which kforge's events on
// args->stream would not bracket.
#include "kforge_hip.h"

__global__ void scale_kernel(const float* x, float* y, float s, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i] + b;
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  static hipStream_t side = nullptr;
  if (!side) hipStreamCreate(&side);
  long long n = kf_hip_attr_i(a, "n");
  scale_kernel<<<(unsigned)((n + 255) / 256), 256, 0, side>>>((const float*)kf_hip_input(a, "x")->data,
      (float*)kf_hip_output(a, "y")->data, (float)kf_hip_attr_f(a, "scale"), (float)kf_hip_attr_f(a, "shift"), n);
  return 0;
}
