#include "eval/inputs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "base/files.h"
#include "base/parallel.h"

namespace kforge {

namespace {

// splitmix64's finalizer.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// ln u for u in (0, 1], from the exponent's bits and +, -, *, / alone: IEEE rounds each of them
// exactly, so numpy computes the same bits (python/kforge_inputs.py), and no libm is involved.
// u = m 2^e with m in [sqrt(2)/2, sqrt(2)); ln m = 2 atanh(t), t = (m - 1) / (m + 1), |t| < 0.172,
// to t^11 (error below 1e-11, which only shapes the distribution: the values are what they are).
// Branch-free, so that the loops below vectorise.
inline double Ln(double u) {
  const uint64_t bits = std::bit_cast<uint64_t>(u);
  double e = static_cast<double>(static_cast<int64_t>((bits >> 52) & 0x7ff) - 1023);
  double m = std::bit_cast<double>((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  const bool big = m > 1.4142135623730951;
  m = big ? m * 0.5 : m;
  e = e + (big ? 1.0 : 0.0);
  const double t = (m - 1.0) / (m + 1.0), t2 = t * t;
  double p = 0.09090909090909091;
  p = p * t2 + 0.1111111111111111;
  p = p * t2 + 0.14285714285714285;
  p = p * t2 + 0.2;
  p = p * t2 + 0.3333333333333333;
  p = p * t2 + 1.0;
  return e * 0.6931471805599453 + 2.0 * t * p;
}

// cos and sin of 2 pi u for u in [0, 1), the same way: the quadrant q = floor(4u), then Taylor
// polynomials of a = (4u - q) pi / 2 in [0, pi / 2) (to a^16 and a^15), rotated by q.
inline void CosSin2Pi(double u, double* c, double* s) {
  const double f4 = u * 4.0;
  const double q = static_cast<double>(static_cast<int32_t>(f4));  // floor: f4 is in [0, 4)
  const double a = (f4 - q) * 1.5707963267948966, a2 = a * a;
  double pc = 4.779477332387385e-14;
  pc = pc * a2 - 1.1470745597729725e-11;
  pc = pc * a2 + 2.08767569878681e-09;
  pc = pc * a2 - 2.755731922398589e-07;
  pc = pc * a2 + 2.48015873015873e-05;
  pc = pc * a2 - 0.001388888888888889;
  pc = pc * a2 + 0.041666666666666664;
  pc = pc * a2 - 0.5;
  pc = pc * a2 + 1.0;
  double ps = -7.647163731819816e-13;
  ps = ps * a2 + 1.6059043836821613e-10;
  ps = ps * a2 - 2.505210838544172e-08;
  ps = ps * a2 + 2.7557319223985893e-06;
  ps = ps * a2 - 0.0001984126984126984;
  ps = ps * a2 + 0.008333333333333333;
  ps = ps * a2 - 0.16666666666666666;
  ps = ps * a2 + 1.0;
  ps = ps * a;
  *c = q == 0.0 ? pc : q == 1.0 ? -ps : q == 2.0 ? -pc : ps;
  *s = q == 0.0 ? ps : q == 1.0 ? pc : q == 2.0 ? -ps : -pc;
}

constexpr double kTwoM53 = 1.0 / 9007199254740992.0;

// x < 2^53 as a double, exactly what static_cast gives, from two 26- and 27-bit halves and
// integer operations only (x86-64 before AVX-512 has no vector uint64-to-double conversion).
inline double ToDoubleExact(uint64_t x) {
  const double hi = std::bit_cast<double>((x >> 26) | 0x4330000000000000ull) - 4503599627370496.0;
  const double lo = std::bit_cast<double>((x & 0x3ffffffull) | 0x4330000000000000ull) - 4503599627370496.0;
  return hi * 67108864.0 + lo;
}

// Elements [first, first + n) of one tensor as float64, before the cast (inputs.h states the
// formula); `first` is even, so that no normal pair straddles two calls. Element i uses draw i.
// One clone per x86-64 level (inputs.h): the same bits from each.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void Draw(const Distribution& d, double magnitude, uint64_t state, size_t first, size_t n, double* out) {
  auto draw = [state](size_t i) { return Mix(state + (i + 1) * 0x9e3779b97f4a7c15ull) >> 11; };
  switch (d.kind) {
    case Distribution::Kind::kNormal: {
      const double a = d.a, b = d.b;
      // In stages over a block of pairs, each a simple loop that vectorises.
      constexpr size_t kBlock = 512;
      double u1[kBlock], u2[kBlock], r[kBlock], c[kBlock], s[kBlock];
      const size_t pairs = (n + 1) / 2;
      for (size_t p0 = 0; p0 < pairs; p0 += kBlock) {
        const size_t m = std::min(kBlock, pairs - p0);
        for (size_t j = 0; j < m; ++j) {
          u1[j] = ToDoubleExact(draw(first + 2 * (p0 + j)) + 1) * kTwoM53;  // (0, 1]
          u2[j] = ToDoubleExact(draw(first + 2 * (p0 + j) + 1)) * kTwoM53;  // [0, 1)
        }
        for (size_t j = 0; j < m; ++j) r[j] = std::sqrt(-2.0 * Ln(u1[j]));
        for (size_t j = 0; j < m; ++j) CosSin2Pi(u2[j], &c[j], &s[j]);
        const size_t full = std::min(m, (n - 2 * p0) / 2);  // pairs with both elements in range
        for (size_t j = 0; j < full; ++j) {
          out[2 * (p0 + j)] = a + b * (r[j] * c[j]);
          out[2 * (p0 + j) + 1] = a + b * (r[j] * s[j]);
        }
        if (full < m) out[2 * (p0 + full)] = a + b * (r[full] * c[full]);  // an odd count: its last sin is dropped
      }
      for (size_t k = 0; k < n; ++k) out[k] = (d.positive ? std::fabs(out[k]) : out[k]) * magnitude;
      return;
    }
    case Distribution::Kind::kUniform:
      for (size_t k = 0; k < n; ++k)
        out[k] = (d.a + (d.b - d.a) * (ToDoubleExact(draw(first + k)) * kTwoM53)) * magnitude;
      return;
    case Distribution::Kind::kIntegers: {
      const double span = d.b - d.a + 1;
      for (size_t k = 0; k < n; ++k)  // integers are not scaled
        out[k] = d.a + std::floor(ToDoubleExact(draw(first + k)) * kTwoM53 * span);
      return;
    }
  }
}

}  // namespace

uint64_t KeyHash(const std::string& key) { return std::stoull(HashHex(key).substr(0, 15), nullptr, 16); }

// Threads for a tensor of `chunks` chunks: $KFORGE_INPUT_THREADS if set, else the cores up to 8,
// never more than the chunks. The values do not depend on it (every element is a function of
// its index).
static size_t GeneratorThreads(size_t chunks) {
  size_t want = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  if (const char* env = std::getenv("KFORGE_INPUT_THREADS"); env && *env) want = std::max(1L, std::atol(env));
  return std::min(want, std::max<size_t>(chunks, 1));
}

std::string GenerateBytes(const TensorShape& shape, const Distribution& dist, const std::string& key, uint64_t seed,
                          double magnitude) {
  std::string bytes(shape.bytes(), '\0');
  GenerateBytesInto(shape, dist, key, seed, magnitude, bytes.data());
  return bytes;
}

void GenerateBytesInto(const TensorShape& shape, const Distribution& dist, const std::string& key, uint64_t seed,
                       double magnitude, char* out) {
  const uint64_t state = Mix(KeyHash(key) ^ Mix(seed));  // the formula of inputs.h, shared with the Python worker
  const size_t n = static_cast<size_t>(shape.numel()), width = DTypeSize(shape.dtype);
  // In chunks of an even length (a normal pair never straddles two), so the temporary stays
  // small; each thread takes the next chunk until none is left (ParallelFor) and keeps its
  // temporary from chunk to chunk and call to call.
  constexpr size_t kChunk = 1 << 16;
  const size_t chunks = (n + kChunk - 1) / kChunk;
  ParallelFor(
      chunks,
      [&](size_t c) {
        thread_local std::vector<double> raw;
        const size_t start = c * kChunk, count = std::min(kChunk, n - start);
        raw.resize(count);
        Draw(dist, magnitude, state, start, count, raw.data());
        FromDouble(shape.dtype, raw.data(), count, out + start * width);
      },
      GeneratorThreads(chunks));
}

std::vector<double> HostTensor::Values() const {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  ToDouble(shape.dtype, bytes().data(), v.size(), v.data());  // exactly what the kernel sees
  return v;
}

HostTensor GenerateTensor(const TensorShape& shape, const Distribution& dist, const std::string& key,
                          uint64_t seed, double magnitude) {
  return HostTensor(shape, GenerateBytes(shape, dist, key, seed, magnitude));
}

std::string InputKey(const BoundProblem& bound, size_t k) {
  return bound.problem->name + "/" + bound.problem->inputs[k].name;
}

std::vector<HostTensor> GenerateInputs(const BoundProblem& bound, uint64_t seed, double magnitude) {
  std::vector<HostTensor> out;
  for (size_t k = 0; k < bound.inputs.size(); ++k)
    out.push_back(GenerateTensor(bound.inputs[k], bound.problem->inputs[k].dist, InputKey(bound, k), seed, magnitude));
  return out;
}

HostTensor AsFloat64(const HostTensor& t) {
  if (!IsFloating(t.shape.dtype) || t.shape.dtype == DType::kFloat64) return t;
  TensorShape shape = t.shape;
  shape.dtype = DType::kFloat64;
  const std::vector<double> values = t.Values();
  return HostTensor(shape, std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double)));
}

}  // namespace kforge
