#include "worker/timed_output.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "worker/protocol.h"

namespace kforge {

namespace {

// The first of n elements of type W equal to `pattern`, or -1.
template <typename W>
int64_t FindWord(const char* data, int64_t n, const unsigned char* pattern) {
  W p;
  std::memcpy(&p, pattern, sizeof p);
  for (int64_t i = 0; i < n; ++i) {
    W w;
    std::memcpy(&w, data + i * sizeof(W), sizeof w);
    if (w == p) return i;
  }
  return -1;
}

// The first of n IEEE elements of type W whose exponent bits are all ones (NaN or Inf), or -1:
// a mask and compare per element, which vectorises; widening each element to double first
// checked 8 MB in 7 ms on the H200's host.
template <typename W>
int64_t FindNonFinite(const char* data, int64_t n, W exponent) {
  constexpr int64_t kBlock = 1024;  // a block without any is passed over without a branch per element
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    bool any = false;
    for (int64_t i = start; i < end; ++i) {
      W w;
      std::memcpy(&w, data + i * sizeof(W), sizeof w);
      any |= (w & exponent) == exponent;
    }
    if (!any) continue;
    for (int64_t i = start; i < end; ++i) {
      W w;
      std::memcpy(&w, data + i * sizeof(W), sizeof w);
      if ((w & exponent) == exponent) return i;
    }
  }
  return -1;
}

int64_t FirstNonFinite(DType t, const char* data, int64_t n) {
  switch (t) {
    case DType::kFloat32: return FindNonFinite<uint32_t>(data, n, 0x7f800000u);
    case DType::kFloat64: return FindNonFinite<uint64_t>(data, n, 0x7ff0000000000000ull);
    case DType::kFloat16: return FindNonFinite<uint16_t>(data, n, 0x7c00u);
    case DType::kBFloat16: return FindNonFinite<uint16_t>(data, n, 0x7f80u);
    default: return -1;
  }
}

}  // namespace

std::string CheckTimedOutput(const TensorShape& shape, const char* data, int which, bool finite) {
  unsigned char pattern[8];
  size_t psize = PoisonPattern(shape.dtype, which, pattern);
  size_t esize = DTypeSize(shape.dtype);
  int64_t n = shape.numel();
  int64_t poisoned = -1;
  if (psize == esize) {
    switch (esize) {  // a word compare per element, not a memcmp call
      case 2: poisoned = FindWord<uint16_t>(data, n, pattern); break;
      case 4: poisoned = FindWord<uint32_t>(data, n, pattern); break;
      case 8: poisoned = FindWord<uint64_t>(data, n, pattern); break;
      default:
        for (int64_t i = 0; i < n && poisoned < 0; ++i)
          if (std::memcmp(data + i * esize, pattern, esize) == 0) poisoned = i;
    }
  }
  if (poisoned >= 0)
    return "output '" + shape.name + "' still holds the poison at element " + std::to_string(poisoned) + " (not written)";
  if (finite && IsFloating(shape.dtype)) {
    const int64_t i = FirstNonFinite(shape.dtype, data, n);
    if (i >= 0) {
      double v = 0;
      ToDouble(shape.dtype, data + i * static_cast<int64_t>(esize), 1, &v);
      return "output '" + shape.name + "' has " + std::to_string(v) + " at element " + std::to_string(i) +
             " where the reference is finite";
    }
  }
  return "";
}

}  // namespace kforge
