// `row_sum` for the cuda backend: one warp per row, float4 loads when the row starts on a
// 16-byte boundary (cols % 4 == 0), scalar loads otherwise, then a warp-shuffle reduction.
#include "kforge_cuda.h"

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
  for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (lane == 0) y[warp] = s;
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  int rows = (int)kf_cuda_attr_i(a, "rows"), cols = (int)kf_cuda_attr_i(a, "cols");
  if (rows == 0) return 0;
  const int warps_per_block = 8;
  row_sum_warp<<<(rows + warps_per_block - 1) / warps_per_block, 32 * warps_per_block, 0, a->stream>>>(
      (const float*)kf_cuda_input(a, "x")->data, (float*)kf_cuda_output(a, "y")->data, rows, cols);
  KF_CUDA_CHECK_LAUNCH(a);
  return 0;
}
