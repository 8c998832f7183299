// Optimized `softmax` for the cpp backend.
//
// Rows are split over OpenMP threads. Each row is read from memory once: the max pass pulls it
// into cache, the exp pass writes exp(x - max) to y while summing, and the last pass scales y
// in place. The passes use GCC vector types (8 floats) explicitly: libm's expf is a scalar call,
// and without -ffast-math GCC will not if-convert the floating-point selects a vector exp
// needs, so plain loops would stay scalar. The max and exp passes take KF_UNROLL vectors per
// iteration with as many independent max / sum accumulators; whole vectors left over go
// through the first accumulator. The row tail (cols % 8) goes through the same code on a
// padded copy.
//
// Tunables (kforge optimize): KF_UNROLL (a power of two); KF_CHUNK_ROWS = 0 gives each thread
// one contiguous static share of the rows, > 0 hands out dynamic chunks of that many rows.
#include <cstdint>
#include <cstring>

#include "kforge_cpu.h"

#define KF_UNROLL 1  // kforge:tune [1, 2, 4]
#define KF_CHUNK_ROWS 0  // kforge:tune [0, 1, 4, 16, 64]

namespace {

typedef float F8 __attribute__((vector_size(32)));

constexpr int kUnroll = KF_UNROLL;
static_assert(kUnroll >= 1 && (kUnroll & (kUnroll - 1)) == 0, "KF_UNROLL must be a power of two");
typedef int32_t I8 __attribute__((vector_size(32)));

inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store8(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }
inline F8 Splat(float s) { return F8{s, s, s, s, s, s, s, s}; }
inline float Sum8(F8 v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}
inline float Max8(F8 v) {
  float m = v[0];
  for (int j = 1; j < 8; ++j) m = v[j] > m ? v[j] : m;
  return m;
}

// exp(x) per lane, accurate to a few ulp on [-87, 88]; lanes below -87 give about 1e-38
// (far inside the tolerance) instead of a denormal. Method: x = n*ln2 + r with |r| <= ln2/2,
// exp(r) by its Taylor series to r^7 (truncation error below 1e-8 relative), and 2^n built
// directly in the exponent bits.
inline F8 Exp8(F8 x) {
  x = x < Splat(-87.0f) ? Splat(-87.0f) : x;
  x = x > Splat(88.0f) ? Splat(88.0f) : x;
  // Round x*log2(e) to the nearest integer: adding 1.5*2^23 leaves n in the low mantissa bits.
  const F8 shift = Splat(12582912.0f);
  const F8 t = x * 1.44269504088896341f + shift;
  const F8 n = t - shift;
  // Cody-Waite reduction with ln2 split in two so r stays accurate.
  F8 r = x - n * 0.693145751953125f;
  r = r - n * 1.42860682030941723212e-6f;
  F8 p = Splat(1.0f / 5040.0f);
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I8 bits = ((I8)t - 0x4B400000 + 127) << 23;  // 2^n: n + bias into the exponent field
  return p * (F8)bits;
}

void SoftmaxRow(const float* __restrict xr, float* __restrict yr, int64_t cols) {
  const int64_t body = cols & ~int64_t{7};
  const int64_t tail = cols - body;
  float pad[8];

  const int64_t step = 8 * kUnroll;
  const int64_t unrolled = cols / step * step;

  F8 m8[kUnroll];
  for (int q = 0; q < kUnroll; ++q) m8[q] = Splat(xr[0]);
  for (int64_t c = 0; c < unrolled; c += step) {
    for (int q = 0; q < kUnroll; ++q) {
      const F8 v = Load8(xr + c + 8 * q);
      m8[q] = v > m8[q] ? v : m8[q];
    }
  }
  for (int64_t c = unrolled; c < body; c += 8) {
    const F8 v = Load8(xr + c);
    m8[0] = v > m8[0] ? v : m8[0];
  }
  for (int q = 1; q < kUnroll; ++q) m8[0] = m8[q] > m8[0] ? m8[q] : m8[0];
  float m = Max8(m8[0]);
  for (int64_t c = body; c < cols; ++c) m = xr[c] > m ? xr[c] : m;

  const F8 mv = Splat(m);
  F8 s8[kUnroll];
  for (int q = 0; q < kUnroll; ++q) s8[q] = Splat(0.0f);
  for (int64_t c = 0; c < unrolled; c += step) {
    F8 e[kUnroll];
    for (int q = 0; q < kUnroll; ++q) e[q] = Exp8(Load8(xr + c + 8 * q) - mv);
    for (int q = 0; q < kUnroll; ++q) {
      Store8(yr + c + 8 * q, e[q]);
      s8[q] += e[q];
    }
  }
  for (int64_t c = unrolled; c < body; c += 8) {
    const F8 e = Exp8(Load8(xr + c) - mv);
    Store8(yr + c, e);
    s8[0] += e;
  }
  for (int w = kUnroll / 2; w > 0; w /= 2)
    for (int q = 0; q < w; ++q) s8[q] += s8[q + w];
  float sum = Sum8(s8[0]);
  if (tail > 0) {
    for (int j = 0; j < 8; ++j) pad[j] = j < tail ? xr[body + j] : m;
    Store8(pad, Exp8(Load8(pad) - mv));
    for (int j = 0; j < tail; ++j) {
      yr[body + j] = pad[j];
      sum += pad[j];
    }
  }

  const float inv = 1.0f / sum;
  for (int64_t c = 0; c < body; c += 8) Store8(yr + c, Load8(yr + c) * inv);
  for (int64_t c = body; c < cols; ++c) yr[c] *= inv;
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
  for (int64_t r = 0; r < rows; ++r) SoftmaxRow(x + r * cols, y + r * cols, cols);
  return 0;
}
