// Naive `matmul` for the opencl backend: one work-item per output element.
__kernel void matmul(__global const float* a, __global const float* b, __global float* c, int m,
                     int k, int n) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  if (i >= m || j >= n) return;
  float sum = 0.0f;
  for (int p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
  c[i * n + j] = sum;
}
