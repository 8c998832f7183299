#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  float s = kf_attr_f(a, "scale"), b = kf_attr_f(a, "shift");
  for (int64_t i = 0; i < kf_attr_i(a, "n"); ++i) y[i] = s * x[i] + b;
  return 0;
}
