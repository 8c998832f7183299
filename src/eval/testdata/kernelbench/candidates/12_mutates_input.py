# Cheats: scales its input in place (saves an allocation, corrupts the caller's tensor).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        x.mul_(self.multiplier)
        return torch.nn.functional.leaky_relu(self.gemm(x), self.negative_slope)
