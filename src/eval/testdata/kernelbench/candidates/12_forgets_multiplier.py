# Wrong: drops the multiplier.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.negative_slope = negative_slope

    def forward(self, x):
        y = self.gemm(x)
        return torch.where(y > 0, y, y * self.negative_slope)
