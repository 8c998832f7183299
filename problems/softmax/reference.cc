// Reference for `softmax`: row-wise softmax, max-subtracted, accumulated in T.
#include <cmath>

#include "kforge_reference.h"

template <typename T>
int Softmax(const kf_cpu_args* a) {
  const T* x = kf_data<T>(kf_input(a, "x"));
  T* y = kf_data<T>(kf_output(a, "y"));
  const int64_t rows = kf_attr_i(a, "rows");
  const int64_t cols = kf_attr_i(a, "cols");
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    T m = xr[0];
    for (int64_t c = 1; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    T sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(xr[c] - m);
    for (int64_t c = 0; c < cols; ++c) yr[c] = std::exp(xr[c] - m) / sum;
  }
  return 0;
}

KF_REFERENCE(Softmax)
