// Naive `gemm_scale_gelu_residual` for the opencl backend: one work-item per output element.
__kernel void gemm_scale_gelu_residual(__global const float* x, __global const float* weight,
                                       __global const float* bias, __global const float* residual,
                                       __global float* y, int batch, int in, int out, float scale) {
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  if (i >= batch || j >= out) return;
  float sum = 0.0f;
  for (int p = 0; p < in; ++p) sum += x[i * in + p] * weight[j * in + p];
  const float z = scale * (sum + bias[j]);
  const float gelu = 0.5f * z * (1.0f + tanh(0.7978845608028654f * (z + 0.044715f * z * z * z)));
  y[i * out + j] = gelu + residual[i * out + j];
}
