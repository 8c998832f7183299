// Loop test fixture for the offline tuner: correct for every value of its two parameters, and
// REPEAT_A * REPEAT_B times slower than it needs to be, because it recomputes the whole output
// that many times. The empty asm with a memory clobber keeps the compiler from merging the
// passes. Best configuration: REPEAT_A = 1, REPEAT_B = 1.
#include "kforge_cpu.h"

#define REPEAT_A 8  // kforge:tune [1, 8, 32]
#define REPEAT_B 32  // kforge:tune [1, 8, 32]

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const float s = kf_attr_f(a, "scale"), b = kf_attr_f(a, "shift");
  const int64_t n = kf_attr_i(a, "n");
  for (int pass = 0; pass < REPEAT_A * REPEAT_B; ++pass) {
    for (int64_t i = 0; i < n; ++i) y[i] = s * x[i] + b;
    __asm__ volatile("" : : : "memory");
  }
  return 0;
}
