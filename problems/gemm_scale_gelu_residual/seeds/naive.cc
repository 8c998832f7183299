// Naive `gemm_scale_gelu_residual` for the cpp backend: one thread, one dot product per
// output element, then the tail.
#include <cmath>

#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  const float* weight = static_cast<const float*>(kf_input(a, "weight")->data);
  const float* bias = static_cast<const float*>(kf_input(a, "bias")->data);
  const float* residual = static_cast<const float*>(kf_input(a, "residual")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t batch = kf_attr_i(a, "batch");
  const int64_t in = kf_attr_i(a, "in_features");
  const int64_t out = kf_attr_i(a, "out_features");
  const float scale = static_cast<float>(kf_attr_f(a, "scale"));
  const float sqrt_2_over_pi = 0.7978845608028654f;
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < out; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < in; ++p) sum += x[i * in + p] * weight[j * in + p];
      const float z = scale * (sum + bias[j]);
      const float gelu =
          0.5f * z * (1.0f + std::tanh(sqrt_2_over_pi * (z + 0.044715f * z * z * z)));
      y[i * out + j] = gelu + residual[i * out + j];
    }
  }
  return 0;
}
