// Naive `layernorm` for the opencl backend: one work-item per row, three plain passes.
__kernel void layernorm_rows(__global const float* x, __global const float* weight,
                             __global const float* bias, __global float* y, int rows, int cols,
                             float eps) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + (size_t)r * cols;
  __global float* yr = y + (size_t)r * cols;
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += xr[c];
  const float mean = sum / cols;
  float sq = 0.0f;
  for (int c = 0; c < cols; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
  const float denom = sqrt(sq / cols + eps);
  for (int c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) / denom * weight[c] + bias[c];
}
