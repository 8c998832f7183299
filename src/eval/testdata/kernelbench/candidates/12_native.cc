// A native (cpp ABI) candidate for the KernelBench problem 12_Gemm_Multiply_LeakyReLU: the
// model's parameters arrive as named inputs (gemm_weight [out, in], gemm_bias [out]) and its
// module constants as attributes.
#include <cstdint>

#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const kf_tensor* x = kf_input(a, "x");
  const float* xs = static_cast<const float*>(x->data);
  const float* w = static_cast<const float*>(kf_input(a, "gemm_weight")->data);
  const float* b = static_cast<const float*>(kf_input(a, "gemm_bias")->data);
  float* y = static_cast<float*>(kf_output(a, "out")->data);
  const int64_t rows = x->shape[0], in = x->shape[1];
  const int64_t out = kf_attr_i(a, "out_features");
  const float mult = static_cast<float>(kf_attr_f(a, "multiplier"));
  const float slope = static_cast<float>(kf_attr_f(a, "negative_slope"));
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      float acc = 0;
      for (int64_t k = 0; k < in; ++k) acc += xs[r * in + k] * w[o * in + k];
      float v = (acc + b[o]) * mult;
      y[r * out + o] = v > 0 ? v : v * slope;
    }
  }
  return 0;
}
