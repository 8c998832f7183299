// `row_sum` for the hip backend: one 32-lane group per row (half a wavefront on CDNA, a whole one
// on RDNA), float4 loads when the row starts on a 16-byte boundary (cols % 4 == 0), scalar loads
// otherwise, then a width-32 shuffle reduction.
#include "kforge_hip.h"

__global__ void row_sum_warp(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= rows) return;
  const float* xr = x + (size_t)warp * cols;
  float s = 0.0f;
  if ((cols & 3) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    for (int c = lane; c < cols / 4; c += 32) { float4 v = x4[c]; s += (v.x + v.y) + (v.z + v.w); }
  } else {
    for (int c = lane; c < cols; c += 32) s += xr[c];
  }
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor(s, off, 32);
  if (lane == 0) y[warp] = s;
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int rows = (int)kf_hip_attr_i(a, "rows"), cols = (int)kf_hip_attr_i(a, "cols");
  if (rows == 0) return 0;
  const int warps_per_block = 8;
  row_sum_warp<<<(rows + warps_per_block - 1) / warps_per_block, 32 * warps_per_block, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (float*)kf_hip_output(a, "y")->data, rows, cols);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
