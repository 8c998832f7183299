// Naive `row_sum` for the hip backend: one thread per row, summing in order.
#include "kforge_hip.h"

__global__ void row_sum(const float* x, float* y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += x[(size_t)r * cols + c];
  y[r] = s;
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int rows = (int)kf_hip_attr_i(a, "rows"), cols = (int)kf_hip_attr_i(a, "cols");
  if (rows == 0) return 0;
  row_sum<<<(rows + 127) / 128, 128, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (float*)kf_hip_output(a, "y")->data, rows, cols);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
