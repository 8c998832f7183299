// Optimized `row_sum` for the cpp backend.
//
// Rows are split over OpenMP threads. Each row is summed with KF_ACCS (four) independent
// 8-lane accumulators (GCC vector types), so the adds pipeline instead of waiting on one serial
// chain and the loop runs at memory bandwidth. Without -ffast-math GCC may not reorder a float
// sum by itself, so the reordering is written out. Whole vectors past the last full group of
// accumulators go into the first one; the tail (cols % 8) is summed serially.
//
// Tunables (kforge optimize): KF_ACCS independent accumulators (a power of two; they are
// added pairwise at the end); KF_CHUNK_ROWS = 0 gives each thread one contiguous static share
// of the rows, > 0 hands out dynamic chunks of that many rows.
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

float SumRow(const float* __restrict xr, int64_t cols) {
  F8 s[kAccs];
  for (int q = 0; q < kAccs; ++q) s[q] = F8{};
  const int64_t step = 8 * kAccs;
  const int64_t body = cols / step * step;
  for (int64_t c = 0; c < body; c += step)
    for (int q = 0; q < kAccs; ++q) s[q] += Load8(xr + c + 8 * q);
  const int64_t vec_end = cols & ~int64_t{7};
  for (int64_t c = body; c < vec_end; c += 8) s[0] += Load8(xr + c);
  for (int w = kAccs / 2; w > 0; w /= 2)
    for (int q = 0; q < w; ++q) s[q] += s[q + w];
  const F8 v = s[0];
  float sum = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
  for (int64_t c = vec_end; c < cols; ++c) sum += xr[c];
  return sum;
}

}  // namespace

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t rows = kf_attr_i(a, "rows");
  const int64_t cols = kf_attr_i(a, "cols");
#if KF_CHUNK_ROWS > 0
#pragma omp parallel for schedule(dynamic, KF_CHUNK_ROWS)
#else
#pragma omp parallel for schedule(static)
#endif
  for (int64_t r = 0; r < rows; ++r) y[r] = SumRow(x + r * cols, cols);
  return 0;
}
