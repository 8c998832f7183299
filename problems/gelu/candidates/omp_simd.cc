// Optimized `gelu` for the cpp backend.
//
// A streaming map split over OpenMP threads, 8 lanes at a time with GCC vector types (libm's
// erff is a scalar call, and without -ffast-math GCC will not vectorize the selects a vector
// erf needs). erf comes from the rational approximation in Abramowitz & Stegun 7.1.26
// (|error| <= 1.5e-7), written for q = 1 - erf(|z|) so that 1 + erf(z) for negative z is
// computed without cancellation. The tail (n % 8) goes through a padded copy.
//
// Tunables (kforge optimize): KF_UNROLL vectors of 8 are loaded, mapped and stored per loop
// iteration (independent chains for the out-of-order core); KF_CHUNK_VECS = 0 splits the
// vectors into one contiguous static share per thread, > 0 hands out dynamic chunks of that
// many vectors (which helps when the cores are shared with other work). Whole vectors left
// over after the unrolled loop are mapped one at a time.
#include <cstdint>
#include <cstring>

#include "kforge_cpu.h"

#define KF_UNROLL 1  // kforge:tune [1, 2, 4, 8]
#define KF_CHUNK_VECS 0  // kforge:tune [0, 512, 2048, 8192]

namespace {

constexpr int64_t kUnroll = KF_UNROLL;
static_assert(kUnroll >= 1 && KF_CHUNK_VECS >= 0, "bad tunables");

typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));

inline F8 Load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void Store8(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }
inline F8 Splat(float s) { return F8{s, s, s, s, s, s, s, s}; }

// exp(x) per lane, a few ulp on [-87, 88]; lanes below -87 give about 1e-38 instead of a
// denormal. x = n*ln2 + r, |r| <= ln2/2; Taylor series of exp(r) to r^7; 2^n via exponent bits.
inline F8 Exp8(F8 x) {
  x = x < Splat(-87.0f) ? Splat(-87.0f) : x;
  x = x > Splat(88.0f) ? Splat(88.0f) : x;
  const F8 shift = Splat(12582912.0f);  // 1.5*2^23: rounds to an integer kept in the low bits
  const F8 t = x * 1.44269504088896341f + shift;
  const F8 n = t - shift;
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
  const I8 bits = ((I8)t - 0x4B400000 + 127) << 23;
  return p * (F8)bits;
}

// 0.5 * x * (1 + erf(x / sqrt(2))) per lane.
inline F8 Gelu8(F8 x) {
  const F8 z = x * 0.70710678118654752f;
  const F8 az = z < Splat(0.0f) ? -z : z;
  const F8 t = Splat(1.0f) / (Splat(1.0f) + az * 0.3275911f);
  F8 poly = Splat(1.061405429f);
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const F8 q = poly * t * Exp8(-az * az);  // q = 1 - erf(|z|)
  const F8 one_plus_erf = z < Splat(0.0f) ? q : Splat(2.0f) - q;
  return Splat(0.5f) * x * one_plus_erf;
}

}  // namespace

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t n = kf_attr_i(a, "n");
  const int64_t blocks = n / 8;
  const int64_t groups = blocks / kUnroll;  // loop iterations of kUnroll vectors
#if KF_CHUNK_VECS > 0
  constexpr int64_t kChunk = KF_CHUNK_VECS / kUnroll > 0 ? KF_CHUNK_VECS / kUnroll : 1;
#pragma omp parallel for schedule(dynamic, kChunk)
#else
#pragma omp parallel for schedule(static)
#endif
  for (int64_t g = 0; g < groups; ++g) {
    const float* xg = x + 8 * kUnroll * g;
    float* yg = y + 8 * kUnroll * g;
    F8 v[kUnroll];
    for (int64_t u = 0; u < kUnroll; ++u) v[u] = Load8(xg + 8 * u);
    for (int64_t u = 0; u < kUnroll; ++u) v[u] = Gelu8(v[u]);
    for (int64_t u = 0; u < kUnroll; ++u) Store8(yg + 8 * u, v[u]);
  }
  for (int64_t b = groups * kUnroll; b < blocks; ++b) Store8(y + 8 * b, Gelu8(Load8(x + 8 * b)));
  const int64_t tail = n - 8 * blocks;
  if (tail > 0) {
    float pad[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::memcpy(pad, x + 8 * blocks, tail * sizeof(float));
    Store8(pad, Gelu8(Load8(pad)));
    std::memcpy(y + 8 * blocks, pad, tail * sizeof(float));
  }
  return 0;
}
