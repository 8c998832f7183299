// Naive `gemm_bias_relu` for the cpp backend: one thread, one dot product per output element.
#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  const float* weight = static_cast<const float*>(kf_input(a, "weight")->data);
  const float* bias = static_cast<const float*>(kf_input(a, "bias")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t batch = kf_attr_i(a, "batch");
  const int64_t in = kf_attr_i(a, "in_features");
  const int64_t out = kf_attr_i(a, "out_features");
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < out; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < in; ++p) sum += x[i * in + p] * weight[j * in + p];
      sum += bias[j];
      y[i * out + j] = sum > 0.0f ? sum : 0.0f;
    }
  }
  return 0;
}
