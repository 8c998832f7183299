// Reference for `gemm_scale_gelu_residual`: z = scale * (x * weight^T + bias),
// y = gelu_tanh(z) + residual; dot products accumulated in T over in_features in order.
#include <cmath>

#include "kforge_reference.h"

template <typename T>
int GemmScaleGeluResidual(const kf_cpu_args* a) {
  const T* x = kf_data<T>(kf_input(a, "x"));
  const T* weight = kf_data<T>(kf_input(a, "weight"));
  const T* bias = kf_data<T>(kf_input(a, "bias"));
  const T* residual = kf_data<T>(kf_input(a, "residual"));
  T* y = kf_data<T>(kf_output(a, "y"));
  const int64_t batch = kf_attr_i(a, "batch");
  const int64_t in = kf_attr_i(a, "in_features");
  const int64_t out = kf_attr_i(a, "out_features");
  const T scale = static_cast<T>(kf_attr_f(a, "scale"));
  const T sqrt_2_over_pi = std::sqrt(T(2) / T(3.14159265358979323846));
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < out; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < in; ++p) sum += x[i * in + p] * weight[j * in + p];
      const T z = scale * (sum + bias[j]);
      const T gelu =
          T(0.5) * z * (T(1) + std::tanh(sqrt_2_over_pi * (z + T(0.044715) * z * z * z)));
      y[i * out + j] = gelu + residual[i * out + j];
    }
  }
  return 0;
}

KF_REFERENCE(GemmScaleGeluResidual)
