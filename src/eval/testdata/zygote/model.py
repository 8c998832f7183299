# The honest ModelNew for 12_Gemm_Multiply_LeakyReLU that the warm-worker tests' candidates share.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        y = torch.addmm(self.gemm.bias, x, self.gemm.weight.t()) * self.multiplier
        return torch.where(y > 0, y, y * self.negative_slope)
