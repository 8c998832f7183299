// Cheating on purpose: computes once into a device-side stash and afterwards only copies the
// stash to the output, whatever the input. The second input set (or the re-verification
// after timing) gets a stale result: wrong_output.
#include "kforge_cuda.h"

__device__ float stash[1 << 20];

__global__ void compute_and_stash(const float* x, float* y, float s, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) { y[i] = s * x[i] + b; if (i < (1 << 20)) stash[i] = y[i]; }
}

__global__ void replay(float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = i < (1 << 20) ? stash[i] : 0.0f;
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  static int calls = 0;
  long long n = kf_cuda_attr_i(a, "n");
  unsigned grid = (unsigned)((n + 255) / 256);
  float* y = (float*)kf_cuda_output(a, "y")->data;
  if (calls++ == 0)
    compute_and_stash<<<grid, 256, 0, a->stream>>>((const float*)kf_cuda_input(a, "x")->data, y,
                                                  (float)kf_cuda_attr_f(a, "scale"), (float)kf_cuda_attr_f(a, "shift"), n);
  else
    replay<<<grid, 256, 0, a->stream>>>(y, n);
  return 0;
}
