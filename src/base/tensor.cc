#include "kforge/tensor.h"

#include <cmath>
#include <cstring>

namespace kforge {

namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
  bool floating;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kFloat32, "float32", 4, true}, {DType::kFloat64, "float64", 8, true},
    {DType::kFloat16, "float16", 2, true}, {DType::kBFloat16, "bfloat16", 2, true},
    {DType::kInt32, "int32", 4, false},    {DType::kInt64, "int64", 8, false},
};

const DTypeInfo& Info(DType t) { return kDTypes[static_cast<int>(t)]; }

// IEEE binary16 <-> float, round to nearest even.
float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal half: value = mant * 2^-24
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u);
  if (absx >= 0x477ff000u) return sign | 0x7c00u;  // rounds to infinity
  if (absx < 0x38800000u) {                         // subnormal or zero in half
    float a;
    std::memcpy(&a, &absx, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  uint32_t mant = absx & 0x7fffffu, exp = (absx >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

float BFloatToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBFloat(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace

const char* DTypeName(DType t) { return Info(t).name; }
size_t DTypeSize(DType t) { return Info(t).size; }
bool IsFloating(DType t) { return Info(t).floating; }

Result<DType> ParseDType(const std::string& name) {
  for (const DTypeInfo& info : kDTypes)
    if (name == info.name) return info.type;
  return Status::InvalidArgument("unknown dtype '" + name +
                                 "'; expected one of float32, float64, float16, bfloat16, "
                                 "int32, int64");
}

int64_t TensorShape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// One loop per dtype, the switch outside it: with the switch inside, -O2 neither hoists it nor
// vectorises the loop, and the float32 cast of a fresh input took as long as drawing it.
template <typename From, typename To, typename Fn>
static void Convert(const void* src, size_t n, void* dst, Fn fn) {
  const From* s = static_cast<const From*>(src);
  To* d = static_cast<To*>(dst);
  for (size_t k = 0; k < n; ++k) d[k] = fn(s[k]);
}

void ToDouble(DType t, const void* src, size_t n, double* dst) {
  switch (t) {
    case DType::kFloat32: return Convert<float, double>(src, n, dst, [](float v) { return static_cast<double>(v); });
    case DType::kFloat64: return Convert<double, double>(src, n, dst, [](double v) { return v; });
    case DType::kFloat16: return Convert<uint16_t, double>(src, n, dst, [](uint16_t v) { return static_cast<double>(HalfToFloat(v)); });
    case DType::kBFloat16: return Convert<uint16_t, double>(src, n, dst, [](uint16_t v) { return static_cast<double>(BFloatToFloat(v)); });
    case DType::kInt32: return Convert<int32_t, double>(src, n, dst, [](int32_t v) { return static_cast<double>(v); });
    case DType::kInt64: return Convert<int64_t, double>(src, n, dst, [](int64_t v) { return static_cast<double>(v); });
  }
}

void FromDouble(DType t, const double* src, size_t n, void* dst) {
  switch (t) {
    case DType::kFloat32: return Convert<double, float>(src, n, dst, [](double v) { return static_cast<float>(v); });
    case DType::kFloat64: return Convert<double, double>(src, n, dst, [](double v) { return v; });
    case DType::kFloat16: return Convert<double, uint16_t>(src, n, dst, [](double v) { return FloatToHalf(static_cast<float>(v)); });
    case DType::kBFloat16: return Convert<double, uint16_t>(src, n, dst, [](double v) { return FloatToBFloat(static_cast<float>(v)); });
    case DType::kInt32: return Convert<double, int32_t>(src, n, dst, [](double v) { return static_cast<int32_t>(v); });
    case DType::kInt64: return Convert<double, int64_t>(src, n, dst, [](double v) { return static_cast<int64_t>(v); });
  }
}

}  // namespace kforge
