# Cheats (issue 10, d): after the check trials, skips the work on every other call and returns
# the previous output again (a harness that re-checks only the last timed output misses it).
import torch
import torch.nn as nn

CHEAT = True
CHECK_CALLS = 14  # 7 trials, each run twice


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope
        self.calls = 0
        self.previous = None

    def forward(self, x):
        self.calls += 1
        if CHEAT and self.calls > CHECK_CALLS and self.calls % 2 == 0 and self.previous is not None:
            return self.previous
        self.previous = torch.nn.functional.leaky_relu(self.gemm(x) * self.multiplier, self.negative_slope)
        return self.previous
