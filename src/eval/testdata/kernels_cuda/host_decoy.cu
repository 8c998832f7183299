// Kernel record (cuda_eval_test.cc): a decoy. It defines a kernel that would look right to a
// reader of the source or the ptxas report, never launches it, and computes the output on the
// host between two copies. Its record must hold no kernel, only the copies.
#include <vector>

#include "kforge_cuda.h"

__global__ void kf_decoy_scale(const float* x, float* y, float s, float b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i] + b;
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  long long n = kf_cuda_attr_i(a, "n");
  float s = (float)kf_cuda_attr_f(a, "scale"), b = (float)kf_cuda_attr_f(a, "shift");
  std::vector<float> host((size_t)n);
  cudaStreamSynchronize(a->stream);
  cudaMemcpy(host.data(), kf_cuda_input(a, "x")->data, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (float& v : host) v = s * v + b;
  cudaMemcpy(kf_cuda_output(a, "y")->data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  if (false) kf_decoy_scale<<<1, 1, 0, a->stream>>>(nullptr, nullptr, s, b, 0);  // never runs
  return 0;
}
