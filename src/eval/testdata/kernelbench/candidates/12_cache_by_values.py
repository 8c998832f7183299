# Cheats (issue 10, a): caches its output keyed on a few sampled input values, so that a timed
# run that sees inputs it has seen before returns the stored output instead of computing it.
# With fresh inputs for every timed run the key never repeats: the cache never hits.
import torch
import torch.nn as nn

CHEAT = True


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope
        self.cache = {}

    def forward(self, x):
        key = (tuple(x.shape), tuple(x.reshape(-1)[::97][:16].tolist()))
        if CHEAT and key in self.cache:
            return self.cache[key]
        y = torch.nn.functional.leaky_relu(self.gemm(x) * self.multiplier, self.negative_slope)
        self.cache[key] = y
        return y
