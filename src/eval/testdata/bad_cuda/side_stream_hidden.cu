// Cheating on purpose: does the work on a stream of its own, created through a macro so the
// static check's patterns do not see the call. The events on args->stream bracket nothing, so
// the device time is tiny; kforge's device-wide synchronise still waits for the side stream,
// so the host time is not. Caught by the host-time gate: suspicious (gate "host_time").
#include "kforge_cuda.h"

#define KF_GLUE(a, b) a##b

// One thread walks the whole tensor, each step waiting for the store before it (a volatile
// read-after-write chain through memory): milliseconds, like a large problem's real work.
__global__ void serial_scale(const float* x, float* y, float s, float b, long long n) {
  volatile float* vy = y;
  for (long long i = 0; i < n; ++i) vy[i] = s * x[i] + b + 0.0f * (i > 0 ? vy[i - 1] : 0.0f);
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  static cudaStream_t side = nullptr;
  if (!side) KF_GLUE(cudaStream, CreateWithFlags)(&side, cudaStreamNonBlocking);
  long long n = kf_cuda_attr_i(a, "n");
  serial_scale<<<1, 1, 0, side>>>((const float*)kf_cuda_input(a, "x")->data,
                                  (float*)kf_cuda_output(a, "y")->data,
                                  (float)kf_cuda_attr_f(a, "scale"), (float)kf_cuda_attr_f(a, "shift"), n);
  return 0;
}
