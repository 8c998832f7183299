// Optimized `layernorm` for the cpp backend.
//
// Rows are split over OpenMP threads; a row (4 KiB at the default size) stays in L1 across
// its three passes, so x is read from memory once. The two reductions use four independent
// 8-lane accumulators (GCC vector types): without -ffast-math GCC may not reorder a float sum
// by itself. The normalize pass folds 1/sqrt(var + eps) into one multiply and vectorizes as a
// plain loop. Tails (cols % 32) are handled serially.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kforge_cpu.h"

namespace {

typedef float F8 __attribute__((vector_size(32)));

inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline float Sum8(F8 v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

float RowMean(const float* __restrict xr, int64_t cols) {
  F8 s0 = {}, s1 = {}, s2 = {}, s3 = {};
  const int64_t body = cols & ~int64_t{31};
  for (int64_t c = 0; c < body; c += 32) {
    s0 += Load8(xr + c);
    s1 += Load8(xr + c + 8);
    s2 += Load8(xr + c + 16);
    s3 += Load8(xr + c + 24);
  }
  float sum = Sum8((s0 + s1) + (s2 + s3));
  for (int64_t c = body; c < cols; ++c) sum += xr[c];
  return sum / static_cast<float>(cols);
}

float RowVariance(const float* __restrict xr, int64_t cols, float mean) {
  F8 s0 = {}, s1 = {}, s2 = {}, s3 = {};
  const int64_t body = cols & ~int64_t{31};
  for (int64_t c = 0; c < body; c += 32) {
    const F8 d0 = Load8(xr + c) - mean, d1 = Load8(xr + c + 8) - mean;
    const F8 d2 = Load8(xr + c + 16) - mean, d3 = Load8(xr + c + 24) - mean;
    s0 += d0 * d0;
    s1 += d1 * d1;
    s2 += d2 * d2;
    s3 += d3 * d3;
  }
  float sq = Sum8((s0 + s1) + (s2 + s3));
  for (int64_t c = body; c < cols; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
  return sq / static_cast<float>(cols);
}

}  // namespace

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  const float* __restrict weight = static_cast<const float*>(kf_input(a, "weight")->data);
  const float* __restrict bias = static_cast<const float*>(kf_input(a, "bias")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t rows = kf_attr_i(a, "rows");
  const int64_t cols = kf_attr_i(a, "cols");
  const float eps = static_cast<float>(kf_attr_f(a, "eps"));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * cols;
    float* __restrict yr = y + r * cols;
    const float mean = RowMean(xr, cols);
    const float rstd = 1.0f / std::sqrt(RowVariance(xr, cols, mean) + eps);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
  }
  return 0;
}
