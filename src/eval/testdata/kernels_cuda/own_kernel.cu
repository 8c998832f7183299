// Kernel record (cuda_eval_test.cc): an honest `scale` candidate whose one kernel, with a name
// no other test uses, runs on the harness's stream. Its record must name that kernel.
#include "kforge_cuda.h"

__global__ void kf_record_scale(const float* x, float* y, float s, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i] + b;
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  long long n = kf_cuda_attr_i(a, "n");
  float s = (float)kf_cuda_attr_f(a, "scale"), b = (float)kf_cuda_attr_f(a, "shift");
  kf_record_scale<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>(
      (const float*)kf_cuda_input(a, "x")->data, (float*)kf_cuda_output(a, "y")->data, s, b, n);
  KF_CUDA_CHECK_LAUNCH(a);
  return 0;
}
