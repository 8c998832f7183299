/* kforge candidate ABI for the `opencl` backend, version 1.
 *
 * An `opencl` candidate is a C++ host file (compiled like a `cpp` candidate and linked with the
 * OpenCL ICD loader) holding its OpenCL C kernels either in a string or in a sibling file with
 * the same stem and the extension .cl (`softmax.cpp` + `softmax.cl`), whose text kforge passes
 * in args->program_source. It exports:
 *
 *   extern "C" int kf_cl_run(const kf_cl_args* args);
 *
 * kf_cl_run enqueues its kernels on args->queue (in order, profiling enabled) and returns 0;
 * it need not wait for them. kforge times everything between a marker before and a marker
 * after the call on that queue. Programs and kernels come from args->kernel(), which builds
 * each (source, options) pair once per worker and caches it; its options are recorded in the
 * verdict (fast-math options are refused unless the problem allows them). It may export
 *
 *   extern "C" int64_t kf_cl_scratch_bytes(const kf_cl_args* args);
 *
 * to receive a scratch buffer of that many bytes in args->scratch (contents undefined).
 *
 * Rules (checked by kforge): write every output element (outputs are poisoned before each
 * call); leave inputs unchanged; use only args->queue (no other queues or contexts); no threads,
 * clocks or I/O on the host side.
 */
#ifndef KFORGE_ABI_KFORGE_OPENCL_H_
#define KFORGE_ABI_KFORGE_OPENCL_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "kforge_cpu.h" /* kf_dtype, kf_attr, lookups, KF_EXPORT */

/* One dense row-major tensor in a device buffer. */
typedef struct kf_cl_tensor {
  const char* name;
  cl_mem buf;
  int32_t dtype; /* kf_dtype */
  int32_t ndim;
  int64_t shape[KF_MAX_DIMS];
  int64_t numel;
} kf_cl_tensor;

typedef struct kf_cl_args kf_cl_args;
struct kf_cl_args {
  int32_t abi_version; /* KF_ABI_VERSION */
  cl_context context;
  cl_device_id device;
  cl_command_queue queue;
  int32_t n_inputs;
  const kf_cl_tensor* inputs;
  int32_t n_outputs;
  const kf_cl_tensor* outputs;
  int32_t n_attrs;
  const kf_attr* attrs;
  cl_mem scratch; /* kf_cl_scratch_bytes() bytes, or NULL */
  int64_t scratch_bytes;
  const char* program_source; /* the sibling .cl file's text, or NULL */
  /* Returns the kernel `name` from `source` built with `options` (may be NULL), building and
   * caching the program on first use. On failure returns NULL and writes the build log to
   * `error`. The kernel is owned by kforge: set its arguments, never release it. */
  cl_kernel (*kernel)(const kf_cl_args* self, const char* source, const char* options,
                      const char* name);
  char* error;
  int64_t error_capacity;
  void* host; /* private to kforge */
};

static inline const kf_cl_tensor* kf_cl_find(const kf_cl_tensor* ts, int32_t n,
                                             const char* name) {
  for (int32_t k = 0; k < n; ++k)
    if (strcmp(ts[k].name, name) == 0) return &ts[k];
  return NULL;
}
static inline cl_mem kf_cl_input(const kf_cl_args* a, const char* name) {
  const kf_cl_tensor* t = kf_cl_find(a->inputs, a->n_inputs, name);
  return t ? t->buf : NULL;
}
static inline cl_mem kf_cl_output(const kf_cl_args* a, const char* name) {
  const kf_cl_tensor* t = kf_cl_find(a->outputs, a->n_outputs, name);
  return t ? t->buf : NULL;
}
static inline int64_t kf_cl_attr_i(const kf_cl_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->i : 0;
}
static inline double kf_cl_attr_f(const kf_cl_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->f : 0.0;
}
static inline int kf_cl_fail(const kf_cl_args* a, const char* message) {
  if (a->error && a->error_capacity > 0) {
    strncpy(a->error, message, (size_t)a->error_capacity - 1);
    a->error[a->error_capacity - 1] = '\0';
  }
  return 1;
}
/* Turns an OpenCL error code into a kf_cl_fail with the call's name. */
#define KF_CL_CHECK(args, call)                                   \
  do {                                                            \
    cl_int kf_err_ = (call);                                      \
    if (kf_err_ != CL_SUCCESS) return kf_cl_fail((args), #call); \
  } while (0)

#endif /* KFORGE_ABI_KFORGE_OPENCL_H_ */
