/* kforge candidate ABI for the `vulkan` backend, version 1.
 *
 * A `vulkan` candidate is a C++ host file (compiled like a `cpp` candidate, not linked with
 * Vulkan) plus one GLSL compute shader in a sibling file with the same stem and the extension
 * .comp (`softmax.cpp` + `softmax.comp`). kforge compiles the shader to SPIR-V ahead of time
 * (glslangValidator, Vulkan 1.1 target) and links the words into the candidate's library. The
 * host file exports:
 *
 *   extern "C" int kf_vk_run(const kf_vk_args* args);
 *
 * kf_vk_run records work through the helpers in args (pipeline, dispatch, fill) and returns 0;
 * it never calls the Vulkan API itself (the static check refuses vk* calls). kforge records
 * everything into one command buffer between two timestamp queries, submits it, and waits.
 *
 * Shader interface: storage buffers at set 0, bindings 0 .. KF_VK_MAX_BINDINGS - 1 (binding k
 * is buffers[k] of the dispatch), one push-constant block of at most KF_VK_MAX_PUSH_BYTES
 * bytes, and specialization constants (constant_id 0, 1, ...: 32-bit values, chosen per
 * pipeline; `layout(local_size_x_id = 0) in;` makes the work-group size one of them). One
 * shader, several kernels: branch on a specialization constant.
 *
 * It may export
 *
 *   extern "C" int64_t kf_vk_scratch_bytes(const kf_vk_args* args);
 *
 * to receive a scratch buffer of that many bytes in args->scratch (contents undefined).
 *
 * Rules (checked by kforge): write every output element (outputs are poisoned before each
 * call); leave inputs unchanged; no Vulkan calls, threads, clocks or I/O on the host side.
 */
#ifndef KFORGE_ABI_KFORGE_VULKAN_H_
#define KFORGE_ABI_KFORGE_VULKAN_H_

#include "kforge_cpu.h" /* kf_dtype, kf_attr, lookups, KF_EXPORT */

#define KF_VK_MAX_BINDINGS 16
#define KF_VK_MAX_PUSH_BYTES 128
#define KF_VK_MAX_SPEC_CONSTANTS 16

/* A device buffer owned by kforge (opaque). */
typedef struct kf_vk_buffer kf_vk_buffer;
/* A compute pipeline of the candidate's shader with one set of specialization constants,
 * owned and cached by kforge (opaque). */
typedef struct kf_vk_pipeline kf_vk_pipeline;

/* One dense row-major tensor in a device buffer. The buffer may be larger than the tensor. */
typedef struct kf_vk_tensor {
  const char* name;
  kf_vk_buffer* buf;
  int32_t dtype; /* kf_dtype */
  int32_t ndim;
  int64_t shape[KF_MAX_DIMS];
  int64_t numel;
} kf_vk_tensor;

/* What the device allows; read these rather than assuming a GPU's limits. */
typedef struct kf_vk_limits {
  uint32_t subgroup_size;             /* 0 when the driver does not say */
  uint32_t max_workgroup_invocations; /* maxComputeWorkGroupInvocations */
  uint32_t max_workgroup_size[3];     /* maxComputeWorkGroupSize */
  uint32_t max_workgroup_count[3];    /* maxComputeWorkGroupCount */
  uint32_t max_shared_bytes;          /* maxComputeSharedMemorySize */
} kf_vk_limits;

typedef struct kf_vk_args kf_vk_args;
struct kf_vk_args {
  int32_t abi_version; /* KF_ABI_VERSION */
  int32_t n_inputs;
  const kf_vk_tensor* inputs;
  int32_t n_outputs;
  const kf_vk_tensor* outputs;
  int32_t n_attrs;
  const kf_attr* attrs;
  kf_vk_buffer* scratch; /* kf_vk_scratch_bytes() bytes, or NULL */
  int64_t scratch_bytes;
  kf_vk_limits limits;
  /* The pipeline for specialization constants spec[0 .. n_spec-1] (constant_id 0 ..), built on
   * first use and cached for the worker's life. NULL on failure, with the reason in `error`. */
  kf_vk_pipeline* (*pipeline)(const kf_vk_args* self, const uint32_t* spec, int32_t n_spec);
  /* Records one dispatch of `groups_x * groups_y * groups_z` work-groups: buffers[k] at
   * binding k (NULL or absent bindings get a small dummy buffer), `push_bytes` (a multiple of
   * 4, at most KF_VK_MAX_PUSH_BYTES) of push constants. A full memory barrier orders it after
   * every earlier dispatch and fill. Returns 0, or 1 with the reason in `error`. */
  int (*dispatch)(const kf_vk_args* self, kf_vk_pipeline* pipeline, kf_vk_buffer* const* buffers,
                  int32_t n_buffers, const void* push, int32_t push_bytes, uint32_t groups_x,
                  uint32_t groups_y, uint32_t groups_z);
  /* Records a fill of the first `bytes` bytes (a multiple of 4) of `b` with `value`, ordered
   * like a dispatch. Returns 0, or 1 with the reason in `error`. */
  int (*fill)(const kf_vk_args* self, kf_vk_buffer* b, int64_t bytes, uint32_t value);
  char* error;
  int64_t error_capacity;
  void* host; /* private to kforge */
};

static inline const kf_vk_tensor* kf_vk_find(const kf_vk_tensor* ts, int32_t n, const char* name) {
  for (int32_t k = 0; k < n; ++k)
    if (strcmp(ts[k].name, name) == 0) return &ts[k];
  return NULL;
}
static inline kf_vk_buffer* kf_vk_input(const kf_vk_args* a, const char* name) {
  const kf_vk_tensor* t = kf_vk_find(a->inputs, a->n_inputs, name);
  return t ? t->buf : NULL;
}
static inline kf_vk_buffer* kf_vk_output(const kf_vk_args* a, const char* name) {
  const kf_vk_tensor* t = kf_vk_find(a->outputs, a->n_outputs, name);
  return t ? t->buf : NULL;
}
static inline int64_t kf_vk_attr_i(const kf_vk_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->i : 0;
}
static inline double kf_vk_attr_f(const kf_vk_args* a, const char* name) {
  const kf_attr* at = kf_find_attr(a->attrs, a->n_attrs, name);
  return at ? at->f : 0.0;
}
static inline int kf_vk_fail(const kf_vk_args* a, const char* message) {
  if (a->error && a->error_capacity > 0) {
    strncpy(a->error, message, (size_t)a->error_capacity - 1);
    a->error[a->error_capacity - 1] = '\0';
  }
  return 1;
}
/* Returns 1 from the calling function when a helper call fails (its reason is in a->error). */
#define KF_VK_CHECK(call)       \
  do {                          \
    if ((call) != 0) return 1;  \
  } while (0)

#endif /* KFORGE_ABI_KFORGE_VULKAN_H_ */
