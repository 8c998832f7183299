// Broken on purpose: writes through a wild device pointer. The device reports an illegal
// address at the synchronise after the call; the verdict is runtime_error naming it.
#include "kforge_cuda.h"

__global__ void wild_write(float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i + (1ll << 40)] = 1.0f;  // a terabyte past the buffer
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  long long n = kf_cuda_attr_i(a, "n");
  wild_write<<<(unsigned)((n + 255) / 256), 256, 0, a->stream>>>((float*)kf_cuda_output(a, "y")->data, n);
  return 0;
}
