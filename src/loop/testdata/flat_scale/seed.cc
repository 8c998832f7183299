// Seed of the flat_scale fixture: the plain loop, run eight times (the empty asm with a memory
// clobber keeps the compiler from merging the passes), so that a one-pass kernel is clearly
// faster even on a loaded machine: about 3-4x on the 2-core VM, where the first pass reads from
// memory and the others from cache. (With two passes it was 1.4x, and in about one CI run in
// ten the one-pass kernel's single judgement did not measure faster than the seed's.)
#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const float s = kf_attr_f(a, "scale"), b = kf_attr_f(a, "shift");
  const int64_t n = kf_attr_i(a, "n");
  for (int pass = 0; pass < 8; ++pass) {
    for (int64_t i = 0; i < n; ++i) y[i] = s * x[i] + b;
    __asm__ volatile("" : : : "memory");
  }
  return 0;
}
