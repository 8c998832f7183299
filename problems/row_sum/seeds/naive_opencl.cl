// Naive `row_sum` for the opencl backend: one work-item per output (row), serial sum.
__kernel void row_sum(__global const float* x, __global float* y, int rows, int cols) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += x[(size_t)r * cols + c];
  y[r] = sum;
}
