#include "kforge_reference.h"

template <typename T>
int Scale(const kf_cpu_args* a) {
  const T* x = kf_data<T>(kf_input(a, "x"));
  T* y = kf_data<T>(kf_output(a, "y"));
  T s = static_cast<T>(kf_attr_f(a, "scale")), b = static_cast<T>(kf_attr_f(a, "shift"));
  for (int64_t i = 0; i < kf_attr_i(a, "n"); ++i) y[i] = s * x[i] + b;
  return 0;
}
KF_REFERENCE(Scale)
