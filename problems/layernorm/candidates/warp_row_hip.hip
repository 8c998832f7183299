// `layernorm` for the hip backend: one 32-lane group per row (half a wavefront on CDNA, a whole
// one on RDNA), width-32 shuffle reductions for the mean and then the centred sum of squares
// (two-pass, like the reference, for accuracy), then the affine pass. Reads after the first come
// from L1/L2.
#include "kforge_hip.h"

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor(v, off, 32);
  return v;
}

__global__ void layernorm_warp_rows(const float* __restrict__ x, const float* __restrict__ w,
                                    const float* __restrict__ b, float* __restrict__ y, int rows,
                                    int cols, float eps) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= rows) return;
  const float* xr = x + (size_t)warp * cols;
  float* yr = y + (size_t)warp * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += xr[c];
  float mean = warp_sum(s) / cols;
  float q = 0.0f;
  for (int c = lane; c < cols; c += 32) { float d = xr[c] - mean; q += d * d; }
  float inv = 1.0f / sqrtf(warp_sum(q) / cols + eps);
  for (int c = lane; c < cols; c += 32) yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int rows = (int)kf_hip_attr_i(a, "rows"), cols = (int)kf_hip_attr_i(a, "cols");
  if (rows == 0) return 0;
  const int warps_per_block = 8;
  layernorm_warp_rows<<<(rows + warps_per_block - 1) / warps_per_block, 32 * warps_per_block, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (const float*)kf_hip_input(a, "weight")->data,
      (const float*)kf_hip_input(a, "bias")->data, (float*)kf_hip_output(a, "y")->data, rows, cols,
      (float)kf_hip_attr_f(a, "eps"));
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
