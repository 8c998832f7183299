#include "worker/timed_output.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "worker/protocol.h"

namespace kforge {

namespace {

constexpr int64_t kBlock = 1024;  // a block without a finding is passed over without a branch per element

// One pass over n elements of type W: the first equal to `pattern` (*poisoned, with `poison`)
// and the first whose `exponent` bits are all ones, NaN or Inf (*non_finite, with `exponent`
// non-zero), each -1 when there is none. A poisoned element is looked for to the end, since it
// outranks an earlier NaN. Per block a mask and compare per element, no branch, which vectorises
// (compiled at -O3, CMakeLists.txt): 8 MB in 0.5 ms on the Xeon guest, against 1.7 ms for the
// two passes with the early exit this replaced.
template <typename W>
void Scan(const char* data, int64_t n, bool poison, W pattern, W exponent, int64_t* poisoned, int64_t* non_finite) {
  *poisoned = -1;
  *non_finite = -1;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    W any_poison = 0, any_non_finite = 0;
    for (int64_t i = start; i < end; ++i) {
      W w;
      std::memcpy(&w, data + i * sizeof(W), sizeof w);
      any_poison |= static_cast<W>(w == pattern);
      any_non_finite |= static_cast<W>(exponent != 0 && (w & exponent) == exponent);
    }
    if (!(poison && any_poison) && !(*non_finite < 0 && any_non_finite)) continue;
    for (int64_t i = start; i < end; ++i) {
      W w;
      std::memcpy(&w, data + i * sizeof(W), sizeof w);
      if (poison && w == pattern) {
        *poisoned = i;
        return;
      }
      if (*non_finite < 0 && exponent != 0 && (w & exponent) == exponent) *non_finite = i;
    }
  }
}

// The NaN/Inf exponent mask of a floating type's bits, 0 for the rest.
template <typename W>
W ExponentBits(DType t) {
  switch (t) {
    case DType::kFloat32: return static_cast<W>(0x7f800000u);
    case DType::kFloat64: return static_cast<W>(0x7ff0000000000000ull);
    case DType::kFloat16: return static_cast<W>(0x7c00u);
    case DType::kBFloat16: return static_cast<W>(0x7f80u);
    default: return 0;
  }
}

template <typename W>
void ScanWords(const TensorShape& shape, const char* data, bool poison, const unsigned char* pattern, bool finite,
               int64_t* poisoned, int64_t* non_finite) {
  W p = 0;
  if (poison) std::memcpy(&p, pattern, sizeof p);
  const W exponent = finite && IsFloating(shape.dtype) && DTypeSize(shape.dtype) == sizeof(W) ? ExponentBits<W>(shape.dtype) : W{0};
  Scan<W>(data, shape.numel(), poison, p, exponent, poisoned, non_finite);
}

}  // namespace

std::string CheckTimedOutput(const TensorShape& shape, const char* data, int which, bool finite) {
  unsigned char pattern[8];
  const size_t psize = PoisonPattern(shape.dtype, which, pattern);
  const size_t esize = DTypeSize(shape.dtype);
  const int64_t n = shape.numel();
  const bool poison = psize == esize;
  int64_t poisoned = -1, non_finite = -1;
  switch (esize) {
    case 2: ScanWords<uint16_t>(shape, data, poison, pattern, finite, &poisoned, &non_finite); break;
    case 4: ScanWords<uint32_t>(shape, data, poison, pattern, finite, &poisoned, &non_finite); break;
    case 8: ScanWords<uint64_t>(shape, data, poison, pattern, finite, &poisoned, &non_finite); break;
    default:
      if (poison)
        for (int64_t i = 0; i < n && poisoned < 0; ++i)
          if (std::memcmp(data + i * esize, pattern, esize) == 0) poisoned = i;
  }
  if (poisoned >= 0)
    return "output '" + shape.name + "' still holds the poison at element " + std::to_string(poisoned) + " (not written)";
  if (non_finite >= 0) {
    double v = 0;
    ToDouble(shape.dtype, data + non_finite * static_cast<int64_t>(esize), 1, &v);
    return "output '" + shape.name + "' has " + std::to_string(v) + " at element " + std::to_string(non_finite) +
           " where the reference is finite";
  }
  return "";
}

}  // namespace kforge
