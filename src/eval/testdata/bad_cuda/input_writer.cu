// Broken on purpose: a correct `scale` whose kernel then overwrites its input's last element
// (in place, as a careless "reuse the input as scratch" would). The first call's outputs are
// right; the verdict is wrong_output because the inputs changed (the device digest of the inputs
// after the check differs from before it). A bit flipped on every call would undo itself over
// the check's two runs.
#include "kforge_cuda.h"

__global__ void scale_then_touch(float* x, float* y, float s, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i] + b;
  if (i == n - 1) x[i] = 1234.5f;  // after its own read: only this thread touches x[n - 1]
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  long long n = kf_cuda_attr_i(a, "n");
  float s = (float)kf_cuda_attr_f(a, "scale"), b = (float)kf_cuda_attr_f(a, "shift");
  float* x = (float*)kf_cuda_input(a, "x")->data;
  float* y = (float*)kf_cuda_output(a, "y")->data;
  scale_then_touch<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>(x, y, s, b, n);
  KF_CUDA_CHECK_LAUNCH(a);
  return 0;
}
