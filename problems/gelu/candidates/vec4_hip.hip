// `gelu` for the hip backend: float4 loads and stores (16 bytes per thread per step), a grid-
// stride loop sized to the CU count, and a scalar tail for sizes not divisible by 4.
#include "kforge_hip.h"

__device__ __forceinline__ float gelu1(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void gelu_vec4(const float4* __restrict__ x, float4* __restrict__ y, long long n4,
                          const float* __restrict__ xs, float* __restrict__ ys, long long n) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    y[i] = make_float4(gelu1(v.x), gelu1(v.y), gelu1(v.z), gelu1(v.w));
  }
  long long t = 4 * n4 + blockIdx.x * (long long)blockDim.x + threadIdx.x;  // the tail
  if (t < n) ys[t] = gelu1(xs[t]);
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  long long n = kf_hip_attr_i(a, "n");
  if (n == 0) return 0;
  const float* x = (const float*)kf_hip_input(a, "x")->data;
  float* y = (float*)kf_hip_output(a, "y")->data;
  long long n4 = n / 4;
  long long want = (n4 + 255) / 256;
  unsigned grid = (unsigned)(want < 8LL * a->cu_count ? (want > 0 ? want : 1) : 8LL * a->cu_count);
  gelu_vec4<<<grid, 256, 0, a->stream>>>((const float4*)x, (float4*)y, n4, x, y, n);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
