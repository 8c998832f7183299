// Naive `gemm_bias_relu` for the hip backend: one thread per output, y = relu(x @ w^T + b).
#include "kforge_hip.h"

__global__ void gemm_bias_relu(const float* x, const float* w, const float* bias, float* y, int batch,
                               int in, int out) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= batch || j >= out) return;
  float s = 0.0f;
  for (int p = 0; p < in; ++p) s += x[(size_t)i * in + p] * w[(size_t)j * in + p];
  y[(size_t)i * out + j] = fmaxf(s + bias[j], 0.0f);
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int batch = (int)kf_hip_attr_i(a, "batch"), in = (int)kf_hip_attr_i(a, "in_features"),
      out = (int)kf_hip_attr_i(a, "out_features");
  if (batch == 0 || out == 0) return 0;
  dim3 block(16, 16), grid((out + 15) / 16, (batch + 15) / 16);
  gemm_bias_relu<<<grid, block, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (const float*)kf_hip_input(a, "weight")->data,
      (const float*)kf_hip_input(a, "bias")->data, (float*)kf_hip_output(a, "y")->data, batch, in, out);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
