// Reference for `gemm_bias_relu`: y = relu(x * weight^T + bias), each dot product accumulated
// in T over in_features in order, then the bias added.
#include "kforge_reference.h"

template <typename T>
int GemmBiasRelu(const kf_cpu_args* a) {
  const T* x = kf_data<T>(kf_input(a, "x"));
  const T* weight = kf_data<T>(kf_input(a, "weight"));
  const T* bias = kf_data<T>(kf_input(a, "bias"));
  T* y = kf_data<T>(kf_output(a, "y"));
  const int64_t batch = kf_attr_i(a, "batch");
  const int64_t in = kf_attr_i(a, "in_features");
  const int64_t out = kf_attr_i(a, "out_features");
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < out; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < in; ++p) sum += x[i * in + p] * weight[j * in + p];
      sum += bias[j];
      y[i * out + j] = sum > 0 ? sum : T(0);
    }
  }
  return 0;
}

KF_REFERENCE(GemmBiasRelu)
