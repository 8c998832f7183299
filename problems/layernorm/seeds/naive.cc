// Naive `layernorm` for the cpp backend: one thread, three plain passes per row.
#include <cmath>

#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  const float* weight = static_cast<const float*>(kf_input(a, "weight")->data);
  const float* bias = static_cast<const float*>(kf_input(a, "bias")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t rows = kf_attr_i(a, "rows");
  const int64_t cols = kf_attr_i(a, "cols");
  const float eps = static_cast<float>(kf_attr_f(a, "eps"));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) sum += xr[c];
    const float mean = sum / cols;
    float sq = 0.0f;
    for (int64_t c = 0; c < cols; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
    const float denom = std::sqrt(sq / cols + eps);
    for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) / denom * weight[c] + bias[c];
  }
  return 0;
}
