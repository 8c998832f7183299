/* kforge candidate ABI for the `hip` backend, version 1.
 *
 * A `hip` candidate is one HIP C++ file holding its kernels and a host launcher, compiled by
 * kforge for the evaluating AMD GPU's own architecture with
 *   hipcc -std=c++20 -O3 -shared -fPIC -fvisibility=hidden --offload-arch=gfxXXXX
 *         -Rpass-analysis=kernel-resource-usage
 * (no fast-math; the HIP runtime, libamdhip64, linked dynamically). It includes this header
 * and exports:
 *
 *   extern "C" int kf_hip_run(const kf_hip_args* args);
 *
 * kf_hip_run launches its kernels on args->stream and returns 0; it need not wait for them.
 * kforge records a hipEvent before and after the call on that stream, then synchronises the
 * whole device and reads the events. Tensors are device pointers on the evaluating GPU, which
 * is the current device when kf_hip_run is called, so `kernel<<<grid, block, smem,
 * args->stream>>>(...)` or hipLaunchKernelGGL need no setup. It may export
 *
 *   extern "C" int64_t kf_hip_scratch_bytes(const kf_hip_args* args);
 *
 * to receive that many bytes of device scratch memory in args->scratch (contents undefined).
 *
 * The wavefront is 64 lanes on CDNA (gfx90a, gfx942) and 32 on RDNA (gfx1030, gfx11xx):
 * read args->warp_size, or use `warpSize` in device code, or shuffle within explicit 32-lane
 * groups (__shfl_xor(v, mask, 32)), which works on both.
 *
 * Rules (checked by kforge; see docs/abi-hip.md): write every output element (outputs are
 * poisoned with NaN before each call); leave inputs unchanged; launch only on args->stream:
 * no streams, events, device synchronisation, device limits, no hipMalloc (use scratch), no
 * rocBLAS/MIOpen/hipBLAS, no clocks (clock64, wall_clock64, s_memtime), no fast-math
 * intrinsics unless the problem allows them, no host threads or I/O.
 *
 * This header is C and C++; it needs hip/hip_runtime.h (for hipStream_t and the launch syntax).
 */
#ifndef KFORGE_ABI_KFORGE_HIP_H_
#define KFORGE_ABI_KFORGE_HIP_H_

#ifndef KF_HIP_NO_RUNTIME_HEADER
#include <hip/hip_runtime.h>
#else /* kforge's own side, built without ROCm: the same handle type */
typedef struct ihipStream_t* hipStream_t;
#endif

#include "kforge_cpu.h" /* kf_dtype, kf_attr, lookups, KF_EXPORT */

/* One dense row-major tensor in device memory. */
typedef struct kf_hip_tensor {
  const char* name; /* as declared in the problem file */
  void* data;       /* device pointer: numel elements of dtype */
  int32_t dtype;    /* kf_dtype */
  int32_t ndim;
  int64_t shape[KF_MAX_DIMS];
  int64_t numel;
} kf_hip_tensor;

typedef struct kf_hip_args {
  int32_t abi_version; /* KF_ABI_VERSION */
  int32_t device;      /* the HIP device ordinal (already current) */
  hipStream_t stream;  /* launch everything here */
  int32_t n_inputs;
  const kf_hip_tensor* inputs; /* in problem-file order; read only */
  int32_t n_outputs;
  const kf_hip_tensor* outputs; /* in problem-file order; write every element */
  int32_t n_attrs;
  const kf_attr* attrs; /* size parameters first, then scalar attributes */
  void* scratch;        /* device pointer: kf_hip_scratch_bytes() bytes, or NULL */
  int64_t scratch_bytes;
  int32_t cu_count;  /* compute units of the device, for grid sizing */
  int32_t warp_size; /* wavefront size: 64 (CDNA) or 32 (RDNA) */
  char arch[64];     /* "gfx90a", as the runtime names the device (feature flags stripped) */
  char* error;       /* message buffer for kf_hip_fail() */
  int64_t error_capacity;
} kf_hip_args;

static inline const kf_hip_tensor* kf_hip_find(const kf_hip_tensor* ts, int32_t n, const char* name) {
  for (int32_t k = 0; k < n; ++k)
    if (strcmp(ts[k].name, name) == 0) return &ts[k];
  return NULL;
}
static inline const kf_hip_tensor* kf_hip_input(const kf_hip_args* a, const char* name) {
  return kf_hip_find(a->inputs, a->n_inputs, name);
}
static inline const kf_hip_tensor* kf_hip_output(const kf_hip_args* a, const char* name) {
  return kf_hip_find(a->outputs, a->n_outputs, name);
}
static inline int64_t kf_hip_attr_i(const kf_hip_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->i : 0;
}
static inline double kf_hip_attr_f(const kf_hip_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->f : 0.0;
}
/* Writes a message for kforge's verdict and returns 1, for `return kf_hip_fail(a, "...")`. */
static inline int kf_hip_fail(const kf_hip_args* a, const char* message) {
  if (a->error && a->error_capacity > 0) {
    strncpy(a->error, message, (size_t)a->error_capacity - 1);
    a->error[a->error_capacity - 1] = '\0';
  }
  return 1;
}
/* Returns kf_hip_fail with the runtime's error name when the last launch failed; use it after
 * each launch: `KF_HIP_CHECK_LAUNCH(a);`. */
#define KF_HIP_CHECK_LAUNCH(args)                              \
  do {                                                         \
    hipError_t kf_err_ = hipGetLastError();                    \
    if (kf_err_ != hipSuccess)                                 \
      return kf_hip_fail((args), hipGetErrorName(kf_err_));    \
  } while (0)

#endif /* KFORGE_ABI_KFORGE_HIP_H_ */
