// Naive `gemm_bias_relu` for the opencl backend: one work-item per output element.
__kernel void gemm_bias_relu(__global const float* x, __global const float* weight,
                             __global const float* bias, __global float* y, int batch, int in,
                             int out) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  if (i >= batch || j >= out) return;
  float sum = 0.0f;
  for (int p = 0; p < in; ++p) sum += x[i * in + p] * weight[j * in + p];
  y[i * out + j] = fmax(sum + bias[j], 0.0f);
}
