// Optimized `layernorm` for the cpp backend.
//
// Rows are split over OpenMP threads; a row (4 KiB at the default size) stays in L1 across
// its three passes, so x is read from memory once. The two reductions use KF_ACCS (four)
// independent 8-lane accumulators (GCC vector types): without -ffast-math GCC may not reorder a
// float sum by itself. The normalize pass folds 1/sqrt(var + eps) into one multiply and
// vectorizes as a plain loop. Whole vectors past the last full group of accumulators go into
// the first one; tails (cols % 8) are handled serially.
//
// Tunables (kforge optimize): KF_ACCS accumulators per reduction (a power of two, added
// pairwise at the end); KF_CHUNK_ROWS = 0 gives each thread one contiguous static share of the
// rows, > 0 hands out dynamic chunks of that many rows.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kforge_cpu.h"

#define KF_ACCS 4  // kforge:tune [1, 2, 4, 8]
#define KF_CHUNK_ROWS 0  // kforge:tune [0, 1, 4, 16, 64]

namespace {

typedef float F8 __attribute__((vector_size(32)));

constexpr int kAccs = KF_ACCS;
static_assert(kAccs >= 1 && (kAccs & (kAccs - 1)) == 0, "KF_ACCS must be a power of two");

inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline float Sum8(F8 v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// Pairwise sum of the accumulators, then of the lanes.
inline float Reduce(F8* s) {
  for (int w = kAccs / 2; w > 0; w /= 2)
    for (int q = 0; q < w; ++q) s[q] += s[q + w];
  return Sum8(s[0]);
}

float RowMean(const float* __restrict xr, int64_t cols) {
  F8 s[kAccs];
  for (int q = 0; q < kAccs; ++q) s[q] = F8{};
  const int64_t step = 8 * kAccs;
  const int64_t body = cols / step * step, vec_end = cols & ~int64_t{7};
  for (int64_t c = 0; c < body; c += step)
    for (int q = 0; q < kAccs; ++q) s[q] += Load8(xr + c + 8 * q);
  for (int64_t c = body; c < vec_end; c += 8) s[0] += Load8(xr + c);
  float sum = Reduce(s);
  for (int64_t c = vec_end; c < cols; ++c) sum += xr[c];
  return sum / static_cast<float>(cols);
}

float RowVariance(const float* __restrict xr, int64_t cols, float mean) {
  F8 s[kAccs];
  for (int q = 0; q < kAccs; ++q) s[q] = F8{};
  const int64_t step = 8 * kAccs;
  const int64_t body = cols / step * step, vec_end = cols & ~int64_t{7};
  for (int64_t c = 0; c < body; c += step) {
    for (int q = 0; q < kAccs; ++q) {
      const F8 d = Load8(xr + c + 8 * q) - mean;
      s[q] += d * d;
    }
  }
  for (int64_t c = body; c < vec_end; c += 8) {
    const F8 d = Load8(xr + c) - mean;
    s[0] += d * d;
  }
  float sq = Reduce(s);
  for (int64_t c = vec_end; c < cols; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
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
#if KF_CHUNK_ROWS > 0
#pragma omp parallel for schedule(dynamic, KF_CHUNK_ROWS)
#else
#pragma omp parallel for schedule(static)
#endif
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
