// Reference for `layernorm`: two-pass mean and biased variance per row, then the affine
// normalization, all accumulated in T.
#include <cmath>

#include "kforge_reference.h"

template <typename T>
int LayerNorm(const kf_cpu_args* a) {
  const T* x = kf_data<T>(kf_input(a, "x"));
  const T* weight = kf_data<T>(kf_input(a, "weight"));
  const T* bias = kf_data<T>(kf_input(a, "bias"));
  T* y = kf_data<T>(kf_output(a, "y"));
  const int64_t rows = kf_attr_i(a, "rows");
  const int64_t cols = kf_attr_i(a, "cols");
  const T eps = static_cast<T>(kf_attr_f(a, "eps"));
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    T sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += xr[c];
    const T mean = sum / static_cast<T>(cols);
    T sq = 0;
    for (int64_t c = 0; c < cols; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
    const T var = sq / static_cast<T>(cols);
    const T denom = std::sqrt(var + eps);
    for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) / denom * weight[c] + bias[c];
  }
  return 0;
}

KF_REFERENCE(LayerNorm)
