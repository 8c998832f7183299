// Naive `softmax` for the opencl backend: one work-item per row, three plain passes.
__kernel void softmax_rows(__global const float* x, __global float* y, int rows, int cols) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + (size_t)r * cols;
  __global float* yr = y + (size_t)r * cols;
  float m = xr[0];
  for (int c = 1; c < cols; ++c) m = fmax(m, xr[c]);
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += exp(xr[c] - m);
  for (int c = 0; c < cols; ++c) yr[c] = exp(xr[c] - m) / sum;
}
