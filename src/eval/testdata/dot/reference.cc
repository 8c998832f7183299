#include "kforge_reference.h"

template <typename T>
int Dot(const kf_cpu_args* a) {
  const T* m = kf_data<T>(kf_input(a, "a"));
  const T* x = kf_data<T>(kf_input(a, "x"));
  T* y = kf_data<T>(kf_output(a, "y"));
  const int64_t rows = kf_attr_i(a, "rows"), k = kf_attr_i(a, "k");
  for (int64_t r = 0; r < rows; ++r) {
    T acc = 0;
    for (int64_t i = 0; i < k; ++i) acc += m[r * k + i] * x[i];
    y[r] = acc;
  }
  return 0;
}
KF_REFERENCE(Dot)
