// Naive `softmax` for the cuda backend: one thread per row, three plain passes.
#include "kforge_cuda.h"

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

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  int rows = (int)kf_cuda_attr_i(a, "rows"), cols = (int)kf_cuda_attr_i(a, "cols");
  if (rows == 0) return 0;
  softmax_rows<<<(rows + 127) / 128, 128, 0, a->stream>>>(
      (const float*)kf_cuda_input(a, "x")->data, (float*)kf_cuda_output(a, "y")->data, rows, cols);
  KF_CUDA_CHECK_LAUNCH(a);
  return 0;
}
