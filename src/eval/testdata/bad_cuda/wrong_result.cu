// Broken on purpose: forgets the shift. The verdict is wrong_output.
#include "kforge_cuda.h"

__global__ void scale_only(const float* x, float* y, float s, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i];
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  long long n = kf_cuda_attr_i(a, "n");
  scale_only<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>(
      (const float*)kf_cuda_input(a, "x")->data, (float*)kf_cuda_output(a, "y")->data,
      (float)kf_cuda_attr_f(a, "scale"), n);
  return 0;
}
