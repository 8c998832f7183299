// Seed of the flat_scale fixture: the plain loop, run twice (the empty asm with a memory clobber
// keeps the compiler from merging the passes), so that a one-pass kernel is about 2x faster.
#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const float s = kf_attr_f(a, "scale"), b = kf_attr_f(a, "shift");
  const int64_t n = kf_attr_i(a, "n");
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t i = 0; i < n; ++i) y[i] = s * x[i] + b;
    __asm__ volatile("" : : : "memory");
  }
  return 0;
}
