/* kforge candidate ABI for the `cpp` backend (C++ on the CPU), version 1.
 *
 * A `cpp` candidate is one C++ source file compiled by kforge into a shared library with
 *   g++ -std=c++20 -O3 -march=native -fopenmp -fPIC -shared
 * It includes this header and exports one function:
 *
 *   extern "C" int kf_run(const kf_cpu_args* args);
 *
 * kf_run computes every output tensor from the input tensors and attributes, and returns 0.
 * On failure it returns non-zero and may write a message with kf_fail(). It may use OpenMP,
 * and it may export
 *
 *   extern "C" int64_t kf_scratch_bytes(const kf_cpu_args* args);
 *
 * to receive that many bytes of scratch memory in args->scratch (contents undefined on entry).
 *
 * Rules (checked by kforge; see docs/evaluation.md): outputs must be fully written on every
 * call (they are poisoned with NaN before each call); inputs must not be modified; no threads
 * other than OpenMP's, no processes, no clocks or timers, no I/O.
 *
 * The reference implementation of a problem uses the same structures (see kforge_reference.h).
 * Tensors are dense and row-major (C order). This header is C and C++.
 */
#ifndef KFORGE_ABI_KFORGE_CPU_H_
#define KFORGE_ABI_KFORGE_CPU_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
#define KF_EXTERN_C extern "C"
#else
#define KF_EXTERN_C
#endif
#define KF_EXPORT KF_EXTERN_C __attribute__((visibility("default")))

#define KF_ABI_VERSION 1
#define KF_MAX_DIMS 8

/* Element types. Values are part of the ABI. */
typedef enum kf_dtype {
  KF_FLOAT32 = 0,
  KF_FLOAT64 = 1,
  KF_FLOAT16 = 2,  /* IEEE half, stored as uint16_t */
  KF_BFLOAT16 = 3, /* bfloat16, stored as uint16_t */
  KF_INT32 = 4,
  KF_INT64 = 5,
} kf_dtype;

/* One dense row-major tensor in host memory. */
typedef struct kf_tensor {
  const char* name;           /* as declared in the problem file */
  void* data;                 /* numel elements of dtype */
  int32_t dtype;              /* kf_dtype */
  int32_t ndim;
  int64_t shape[KF_MAX_DIMS];
  int64_t numel;
} kf_tensor;

/* A size parameter or scalar attribute of the problem. Integers have both fields set. */
typedef struct kf_attr {
  const char* name;
  int64_t i;
  double f;
} kf_attr;

typedef struct kf_cpu_args {
  int32_t abi_version; /* KF_ABI_VERSION */
  int32_t n_inputs;
  const kf_tensor* inputs; /* in problem-file order; read only */
  int32_t n_outputs;
  const kf_tensor* outputs; /* in problem-file order; write every element */
  int32_t n_attrs;
  const kf_attr* attrs; /* size parameters first, then scalar attributes */
  void* scratch;        /* kf_scratch_bytes() bytes, or NULL */
  int64_t scratch_bytes;
  char* error; /* message buffer for kf_fail() */
  int64_t error_capacity;
} kf_cpu_args;

/* Lookups by name. A missing name is a bug in the candidate: they return NULL / 0. */
static inline const kf_tensor* kf_find_tensor(const kf_tensor* ts, int32_t n, const char* name) {
  for (int32_t k = 0; k < n; ++k)
    if (strcmp(ts[k].name, name) == 0) return &ts[k];
  return NULL;
}
static inline const kf_tensor* kf_input(const kf_cpu_args* a, const char* name) {
  return kf_find_tensor(a->inputs, a->n_inputs, name);
}
static inline const kf_tensor* kf_output(const kf_cpu_args* a, const char* name) {
  return kf_find_tensor(a->outputs, a->n_outputs, name);
}
static inline const kf_attr* kf_find_attr(const kf_attr* as, int32_t n, const char* name) {
  for (int32_t k = 0; k < n; ++k)
    if (strcmp(as[k].name, name) == 0) return &as[k];
  return NULL;
}
static inline int64_t kf_attr_i(const kf_cpu_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->i : 0;
}
static inline double kf_attr_f(const kf_cpu_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->f : 0.0;
}
/* Writes a message for kforge's verdict and returns 1, for `return kf_fail(a, "...")`. */
static inline int kf_fail(const kf_cpu_args* a, const char* message) {
  if (a->error && a->error_capacity > 0) {
    strncpy(a->error, message, (size_t)a->error_capacity - 1);
    a->error[a->error_capacity - 1] = '\0';
  }
  return 1;
}

#endif /* KFORGE_ABI_KFORGE_CPU_H_ */
