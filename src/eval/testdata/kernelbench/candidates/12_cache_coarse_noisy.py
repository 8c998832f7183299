# Cheats (issue 10, a), the noisy variant of 12_cache_coarse.py (NOISE = True): after the check
# trials, returns cached outputs keyed on the input's shape and rounded mean, each perturbed so
# that no two timed outputs are byte-identical.
import torch
import torch.nn as nn

CHEAT = True
NOISE = True
CHECK_CALLS = 14  # 7 trials, each run twice


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope
        self.cache = {}
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        key = (tuple(x.shape), round(float(x.mean()), 1))
        if CHEAT and self.calls > CHECK_CALLS and key in self.cache:
            y = self.cache[key]
            return y * (1 + 1e-6 * self.calls) if NOISE else y
        y = torch.nn.functional.leaky_relu(self.gemm(x) * self.multiplier, self.negative_slope)
        self.cache[key] = y
        return y
