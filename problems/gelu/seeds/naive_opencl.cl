// Naive `gelu` for the opencl backend: one work-item per element.
__kernel void gelu(__global const float* x, __global float* y, int n) {
  const int i = get_global_id(0);
  if (i < n) y[i] = 0.5f * x[i] * (1.0f + erf(x[i] / sqrt(2.0f)));
}
