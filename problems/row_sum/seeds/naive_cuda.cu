// Naive `row_sum` for the cuda backend: one thread per row, summing in order.
#include "kforge_cuda.h"

__global__ void row_sum(const float* x, float* y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += x[(size_t)r * cols + c];
  y[r] = s;
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  int rows = (int)kf_cuda_attr_i(a, "rows"), cols = (int)kf_cuda_attr_i(a, "cols");
  if (rows == 0) return 0;
  row_sum<<<(rows + 127) / 128, 128, 0, a->stream>>>(
      (const float*)kf_cuda_input(a, "x")->data, (float*)kf_cuda_output(a, "y")->data, rows, cols);
  KF_CUDA_CHECK_LAUNCH(a);
  return 0;
}
