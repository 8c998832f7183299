// Reference for `row_sum`: sum over the last dimension, accumulated in T.
#include "kforge_reference.h"

template <typename T>
int RowSum(const kf_cpu_args* a) {
  const T* x = kf_data<T>(kf_input(a, "x"));
  T* y = kf_data<T>(kf_output(a, "y"));
  const int64_t rows = kf_attr_i(a, "rows");
  const int64_t cols = kf_attr_i(a, "cols");
  for (int64_t r = 0; r < rows; ++r) {
    T sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
  return 0;
}

KF_REFERENCE(RowSum)
