// Naive `softmax` for the hip backend: one thread per row, three plain passes.
#include "kforge_hip.h"

__global__ void softmax_rows(const float* x, float* y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + (size_t)r * cols;
  float* yr = y + (size_t)r * cols;
  float m = xr[0];
  for (int c = 1; c < cols; ++c) m = fmaxf(m, xr[c]);
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += expf(xr[c] - m);
  for (int c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) / sum;
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int rows = (int)kf_hip_attr_i(a, "rows"), cols = (int)kf_hip_attr_i(a, "cols");
  if (rows == 0) return 0;
  softmax_rows<<<(rows + 127) / 128, 128, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (float*)kf_hip_output(a, "y")->data, rows, cols);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
