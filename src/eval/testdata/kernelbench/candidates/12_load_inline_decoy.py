# A decoy: a KernelBench-format candidate that builds a CUDA extension (load_inline) with a
# kernel of its own, then computes with PyTorch operations and never launches it. The kernels
# record of a check call holds only cuBLAS and ATen kernels, no decoy_scale_kernel. Needs a GPU
# and nvcc.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void decoy_scale_kernel(float* y, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= s;
}

torch::Tensor decoy_scale(torch::Tensor y, double s) {
  const int n = y.numel();
  decoy_scale_kernel<<<(n + 255) / 256, 256>>>(y.data_ptr<float>(), n, (float)s);
  return y;
}
"""
cpp_source = "torch::Tensor decoy_scale(torch::Tensor y, double s);"

module = load_inline(name="kforge_test_decoy_scale", cpp_sources=[cpp_source], cuda_sources=[cuda_source],
                     functions=["decoy_scale"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        y = torch.addmm(self.gemm.bias, x, self.gemm.weight.t()) * self.multiplier
        return torch.where(y > 0, y, y * self.negative_slope)
