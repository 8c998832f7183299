// Naive `matmul` for the cpp backend: one thread, one dot product per output element.
#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* args) {
  const float* a = static_cast<const float*>(kf_input(args, "a")->data);
  const float* b = static_cast<const float*>(kf_input(args, "b")->data);
  float* c = static_cast<float*>(kf_output(args, "c")->data);
  const int64_t m = kf_attr_i(args, "m");
  const int64_t k = kf_attr_i(args, "k");
  const int64_t n = kf_attr_i(args, "n");
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
      c[i * n + j] = sum;
    }
  }
  return 0;
}
