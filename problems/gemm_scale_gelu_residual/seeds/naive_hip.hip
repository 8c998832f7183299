// Naive `gemm_scale_gelu_residual` for the hip backend: one thread per output,
// y = gelu_tanh(scale * (x @ w^T + b)) + residual.
#include "kforge_hip.h"

__global__ void gemm_scale_gelu_residual(const float* x, const float* w, const float* bias,
                                         const float* residual, float* y, int batch, int in, int out,
                                         float scale) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= batch || j >= out) return;
  float s = 0.0f;
  for (int p = 0; p < in; ++p) s += x[(size_t)i * in + p] * w[(size_t)j * in + p];
  float z = scale * (s + bias[j]);
  float g = 0.5f * z * (1.0f + tanhf(0.7978845608028654f * (z + 0.044715f * z * z * z)));
  y[(size_t)i * out + j] = g + residual[(size_t)i * out + j];
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int batch = (int)kf_hip_attr_i(a, "batch"), in = (int)kf_hip_attr_i(a, "in_features"),
      out = (int)kf_hip_attr_i(a, "out_features");
  if (batch == 0 || out == 0) return 0;
  dim3 block(16, 16), grid((out + 15) / 16, (batch + 15) / 16);
  gemm_scale_gelu_residual<<<grid, block, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (const float*)kf_hip_input(a, "weight")->data,
      (const float*)kf_hip_input(a, "bias")->data, (const float*)kf_hip_input(a, "residual")->data,
      (float*)kf_hip_output(a, "y")->data, batch, in, out, (float)kf_hip_attr_f(a, "scale"));
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
