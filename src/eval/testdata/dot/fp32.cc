// Test fixture: y = A x in plain float32.
#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* m = static_cast<const float*>(kf_input(a, "a")->data);
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t rows = kf_attr_i(a, "rows"), k = kf_attr_i(a, "k");
  for (int64_t r = 0; r < rows; ++r) {
    float acc = 0;
    for (int64_t i = 0; i < k; ++i) acc += m[r * k + i] * x[i];
    y[r] = acc;
  }
  return 0;
}
