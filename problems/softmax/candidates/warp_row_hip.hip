// `softmax` for the hip backend: one 32-lane group per row (half a wavefront on CDNA, a whole one
// on RDNA). Pass 1 keeps a running (max, sum) per lane (online softmax) and merges the 32 pairs
// with width-32 shuffles; pass 2 writes exp(x - m) / s. The row is read twice; the second read
// mostly hits L1/L2.
#include "kforge_hip.h"

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  float mm = fmaxf(m, m2);
  if (mm == -INFINITY) return;  // both empty
  s = s * expf(m - mm) + s2 * expf(m2 - mm);
  m = mm;
}

__global__ void softmax_warp_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= rows) return;
  const float* xr = x + (size_t)warp * cols;
  float* yr = y + (size_t)warp * cols;
  float m = -INFINITY, s = 0.0f;
  for (int c = lane; c < cols; c += 32) merge(m, s, xr[c], 1.0f);
  for (int off = 16; off > 0; off >>= 1) {
    float m2 = __shfl_xor(m, off, 32), s2 = __shfl_xor(s, off, 32);
    merge(m, s, m2, s2);
  }
  float inv = 1.0f / s;
  for (int c = lane; c < cols; c += 32) yr[c] = expf(xr[c] - m) * inv;
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int rows = (int)kf_hip_attr_i(a, "rows"), cols = (int)kf_hip_attr_i(a, "cols");
  if (rows == 0) return 0;
  const int warps_per_block = 8;
  softmax_warp_rows<<<(rows + warps_per_block - 1) / warps_per_block, 32 * warps_per_block, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (float*)kf_hip_output(a, "y")->data, rows, cols);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
