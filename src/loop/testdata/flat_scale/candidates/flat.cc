// Loop test fixture for confirmation: the seed's loop with two tunable parameters that are never
// used, so every configuration compiles to the same kernel (each to its own library, since
// the sources differ) and any difference in their times is noise.
#include "kforge_cpu.h"

#define FLAT_A 0  // kforge:tune [0, 1, 2]
#define FLAT_B 0  // kforge:tune [0, 1]

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const float s = kf_attr_f(a, "scale"), b = kf_attr_f(a, "shift");
  const int64_t n = kf_attr_i(a, "n");
  for (int64_t i = 0; i < n; ++i) y[i] = s * x[i] + b;
  return 0;
}
