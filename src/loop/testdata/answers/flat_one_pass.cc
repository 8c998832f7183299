// Scripted answer for the flat_scale fixture: one pass, several times faster than its eight-pass seed.
#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const float s = kf_attr_f(a, "scale"), b = kf_attr_f(a, "shift");
  const int64_t n = kf_attr_i(a, "n");
  for (int64_t i = 0; i < n; ++i) y[i] = s * x[i] + b;
  return 0;
}
