// Reference for `matmul`: C = A * B, each C[i, j] accumulated in T over k in order.
#include "kforge_reference.h"

template <typename T>
int Matmul(const kf_cpu_args* a) {
  const T* A = kf_data<T>(kf_input(a, "a"));
  const T* B = kf_data<T>(kf_input(a, "b"));
  T* C = kf_data<T>(kf_output(a, "c"));
  const int64_t m = kf_attr_i(a, "m");
  const int64_t k = kf_attr_i(a, "k");
  const int64_t n = kf_attr_i(a, "n");
  // i-p-j order: the same per-element summation order as i-j-p, but B is read along its rows.
  for (int64_t i = 0; i < m; ++i) {
    T* ci = C + i * n;
    for (int64_t j = 0; j < n; ++j) ci[j] = 0;
    for (int64_t p = 0; p < k; ++p) {
      const T aip = A[i * k + p];
      const T* bp = B + p * n;
      for (int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
    }
  }
  return 0;
}

KF_REFERENCE(Matmul)
