#include "kforge_hip.h"
__global__ void spill_kernel(float* y, const int* idx) {
  float local[300];
  for (int i = 0; i < 300; ++i) local[i] = y[i] * i;
  y[threadIdx.x] = local[idx[threadIdx.x]];
}
__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, float s, int64_t n) {
  __shared__ float t[256];
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  t[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i < n) y[i] = s * t[threadIdx.x];
}
KF_EXPORT int kf_hip_run(const kf_hip_args* a) { return 0; }
