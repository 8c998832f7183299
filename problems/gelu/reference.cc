// Reference for `gelu`: exact (erf) GELU, elementwise.
#include <cmath>

#include "kforge_reference.h"

template <typename T>
int Gelu(const kf_cpu_args* a) {
  const T* x = kf_data<T>(kf_input(a, "x"));
  T* y = kf_data<T>(kf_output(a, "y"));
  const int64_t n = kf_attr_i(a, "n");
  const T inv_sqrt2 = T(1) / std::sqrt(T(2));
  for (int64_t i = 0; i < n; ++i) y[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] * inv_sqrt2));
  return 0;
}

KF_REFERENCE(Gelu)
