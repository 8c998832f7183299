// Scripted answer (a): does not compile (an undeclared name).
#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  y[0] = kforge_undeclared_scale_factor;
  return 0;
}
