/* kforge candidate ABI for the `cuda` backend, version 1.
 *
 * A `cuda` candidate is one CUDA C++ file (.cu) holding its kernels and a host launcher,
 * compiled by kforge for the evaluating GPU's own architecture with
 *   nvcc -std=c++20 -O3 -shared -Xcompiler -fPIC,-fvisibility=hidden -arch=sm_XX -lineinfo -Xptxas -v
 * (the runtime library linked statically). It includes this header and exports:
 *
 *   extern "C" int kf_cuda_run(const kf_cuda_args* args);
 *
 * kf_cuda_run launches its kernels on args->stream and returns 0; it need not wait for them.
 * kforge records a device event before and after the call on that stream, then synchronises
 * the whole device and reads the events. Tensors are device pointers into the primary context
 * of the evaluating GPU, which is current when kf_cuda_run is called, so runtime-API launches
 * (`kernel<<<grid, block, smem, args->stream>>>(...)`) need no setup. It may export
 *
 *   extern "C" int64_t kf_cuda_scratch_bytes(const kf_cuda_args* args);
 *
 * to receive that many bytes of device scratch memory in args->scratch (contents undefined).
 *
 * Rules (checked by kforge; see docs/abi-cuda.md): write every output element (outputs are
 * poisoned with NaN before each call); leave inputs unchanged; launch only on args->stream:
 * no streams, events, device synchronisation, device or context limits, no cudaMalloc (use
 * scratch), no cuBLAS/cuDNN, no clocks or timers (clock64, %globaltimer), no fast-math
 * intrinsics unless the problem allows them, no host threads or I/O.
 *
 * This header is C and C++; it needs cuda_runtime_api.h only for cudaStream_t.
 */
#ifndef KFORGE_ABI_KFORGE_CUDA_H_
#define KFORGE_ABI_KFORGE_CUDA_H_

#ifndef KF_CUDA_NO_RUNTIME_HEADER
#include <cuda_runtime_api.h>
#else /* kforge's own side, built without the CUDA toolkit: the same handle type */
typedef struct CUstream_st* cudaStream_t;
#endif

#include "kforge_cpu.h" /* kf_dtype, kf_attr, lookups, KF_EXPORT */

/* One dense row-major tensor in device memory. */
typedef struct kf_cuda_tensor {
  const char* name; /* as declared in the problem file */
  void* data;       /* device pointer: numel elements of dtype */
  int32_t dtype;    /* kf_dtype */
  int32_t ndim;
  int64_t shape[KF_MAX_DIMS];
  int64_t numel;
} kf_cuda_tensor;

typedef struct kf_cuda_args {
  int32_t abi_version; /* KF_ABI_VERSION */
  int32_t device;      /* the CUDA device ordinal (already current) */
  cudaStream_t stream; /* launch everything here */
  int32_t n_inputs;
  const kf_cuda_tensor* inputs; /* in problem-file order; read only */
  int32_t n_outputs;
  const kf_cuda_tensor* outputs; /* in problem-file order; write every element */
  int32_t n_attrs;
  const kf_attr* attrs; /* size parameters first, then scalar attributes */
  void* scratch;        /* device pointer: kf_cuda_scratch_bytes() bytes, or NULL */
  int64_t scratch_bytes;
  int32_t sm_count;           /* multiprocessors of the device, for grid sizing */
  int32_t compute_capability; /* 90 for sm_90 */
  char* error;                /* message buffer for kf_cuda_fail() */
  int64_t error_capacity;
} kf_cuda_args;

static inline const kf_cuda_tensor* kf_cuda_find(const kf_cuda_tensor* ts, int32_t n,
                                                 const char* name) {
  for (int32_t k = 0; k < n; ++k)
    if (strcmp(ts[k].name, name) == 0) return &ts[k];
  return NULL;
}
static inline const kf_cuda_tensor* kf_cuda_input(const kf_cuda_args* a, const char* name) {
  return kf_cuda_find(a->inputs, a->n_inputs, name);
}
static inline const kf_cuda_tensor* kf_cuda_output(const kf_cuda_args* a, const char* name) {
  return kf_cuda_find(a->outputs, a->n_outputs, name);
}
static inline int64_t kf_cuda_attr_i(const kf_cuda_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->i : 0;
}
static inline double kf_cuda_attr_f(const kf_cuda_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->f : 0.0;
}
/* Writes a message for kforge's verdict and returns 1, for `return kf_cuda_fail(a, "...")`. */
static inline int kf_cuda_fail(const kf_cuda_args* a, const char* message) {
  if (a->error && a->error_capacity > 0) {
    strncpy(a->error, message, (size_t)a->error_capacity - 1);
    a->error[a->error_capacity - 1] = '\0';
  }
  return 1;
}
/* Returns kf_cuda_fail with the runtime's error name when the last launch failed; use it after
 * each launch: `KF_CUDA_CHECK_LAUNCH(a);`. */
#define KF_CUDA_CHECK_LAUNCH(args)                                   \
  do {                                                               \
    cudaError_t kf_err_ = cudaGetLastError();                        \
    if (kf_err_ != cudaSuccess)                                      \
      return kf_cuda_fail((args), cudaGetErrorName(kf_err_));        \
  } while (0)

#endif /* KFORGE_ABI_KFORGE_CUDA_H_ */
