// Test fixture: y = A x as a TF32 matrix unit computes it: each operand rounded to 10 mantissa
// bits (to nearest even), products and sums in float32.
#include <cstdint>
#include <cstring>

#include "kforge_cpu.h"

static float Round(float v) {
  constexpr int kDrop = 23 - 10;
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u = (u + ((1u << (kDrop - 1)) - 1) + ((u >> kDrop) & 1)) & ~((1u << kDrop) - 1);
  std::memcpy(&v, &u, 4);
  return v;
}

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* m = static_cast<const float*>(kf_input(a, "a")->data);
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t rows = kf_attr_i(a, "rows"), k = kf_attr_i(a, "k");
  for (int64_t r = 0; r < rows; ++r) {
    float acc = 0;
    for (int64_t i = 0; i < k; ++i) acc += Round(m[r * k + i]) * Round(x[i]);
    y[r] = acc;
  }
  return 0;
}
