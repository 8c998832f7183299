/* kforge reference ABI, version 1: how a problem's reference implementation is written.
 *
 * A reference is one C++ file with a function template over the floating-point element type
 * and one KF_REFERENCE line:
 *
 *   #include "kforge_reference.h"
 *   template <typename T>
 *   int Softmax(const kf_cpu_args* a) {
 *     const T* x = kf_data<T>(kf_input(a, "x"));
 *     T* y = kf_data<T>(kf_output(a, "y"));
 *     ...
 *     return 0;
 *   }
 *   KF_REFERENCE(Softmax)
 *
 * kforge compiles it (g++ -O2, no fast-math) and calls
 *   kf_reference_f64    with every floating-point tensor converted to float64 (the check), and
 *   kf_reference_native with the tensors in their declared dtype (float32 problems only),
 *                       which is the "reference" baseline that candidates are timed against.
 * Integer tensors keep their declared type in both. Attributes and sizes are as for kf_run.
 */
#ifndef KFORGE_ABI_KFORGE_REFERENCE_H_
#define KFORGE_ABI_KFORGE_REFERENCE_H_

#include "kforge_cpu.h"

#ifdef __cplusplus
template <typename T>
static inline T* kf_data(const kf_tensor* t) {
  return static_cast<T*>(t->data);
}

#define KF_REFERENCE(fn)                                                       \
  KF_EXPORT int kf_reference_f64(const kf_cpu_args* a) { return fn<double>(a); } \
  KF_EXPORT int kf_reference_native(const kf_cpu_args* a) { return fn<float>(a); }
#endif

#endif /* KFORGE_ABI_KFORGE_REFERENCE_H_ */
