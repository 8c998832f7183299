// Kernel record (cuda_eval_test.cc): launches on a stream of its own, which it creates, and
// returns without waiting; the kernel sleeps so that it surely ends after the return. The
// record must see it, on a stream other than the harness's, ending after the return.
#include "kforge_cuda.h"

__global__ void kf_record_side(const float* x, float* y, float s, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (int k = 0; k < 20; ++k) __nanosleep(100000);  // about 2 ms
  if (i < n) y[i] = s * x[i] + b;
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  static cudaStream_t side = nullptr;
  if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  long long n = kf_cuda_attr_i(a, "n");
  kf_record_side<<<(unsigned)((n + 255) / 256), 256, 0, side>>>(
      (const float*)kf_cuda_input(a, "x")->data, (float*)kf_cuda_output(a, "y")->data,
      (float)kf_cuda_attr_f(a, "scale"), (float)kf_cuda_attr_f(a, "shift"), n);
  return 0;
}
