# A KernelBench-format candidate whose own CUDA kernel (torch.utils.cpp_extension.load_inline)
# does all the work: the GEMM, bias, multiplier and LeakyReLU in one naive kernel. Needs a GPU
# and nvcc; the kernels record of a check call names gemm_mul_leaky_kernel.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void gemm_mul_leaky_kernel(const float* x, const float* w, const float* b, float* y,
                                      int M, int N, int K, float mult, float slope) {
  int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += x[i * K + k] * w[j * K + k];
  float v = (acc + b[j]) * mult;
  y[i * N + j] = v > 0.0f ? v : v * slope;
}

torch::Tensor gemm_mul_leaky(torch::Tensor x, torch::Tensor w, torch::Tensor b, double mult, double slope) {
  auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous();
  const int M = xc.size(0), K = xc.size(1), N = wc.size(0);
  auto y = torch::empty({M, N}, xc.options());
  dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
  gemm_mul_leaky_kernel<<<grid, block>>>(xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(),
                                         y.data_ptr<float>(), M, N, K, (float)mult, (float)slope);
  return y;
}
"""
cpp_source = "torch::Tensor gemm_mul_leaky(torch::Tensor x, torch::Tensor w, torch::Tensor b, double mult, double slope);"

module = load_inline(name="kforge_test_gemm_mul_leaky_cuda", cpp_sources=[cpp_source], cuda_sources=[cuda_source],
                     functions=["gemm_mul_leaky"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return module.gemm_mul_leaky(x, self.gemm.weight, self.gemm.bias, self.multiplier, self.negative_slope)
