# Plants a file in its torch extension folder (TORCH_EXTENSIONS_DIR) under the name of another
# candidate's extension (12_load_inline_checked.py's), counting there the loads that found it,
# and tries to add a folder next to its own, in the store of every candidate's folders. A
# candidate of other source must never see the first, nobody the second; a later job of this
# same source starts from what this one left. It computes with PyTorch (no kernel of its own).
import os

import torch
import torch.nn as nn


def plant():
    own = os.environ["TORCH_EXTENSIONS_DIR"]
    folder = os.path.join(own, "kforge_test_gemm_mul_leaky_checked")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "kforge-planted")
    try:
        with open(path) as f:
            n = int(f.read())
    except (OSError, ValueError):
        n = 0
    with open(path, "w") as f:
        f.write(str(n + 1))
    try:
        os.makedirs(os.path.join(os.path.dirname(own), "kforge-planted-store"))
    except OSError:
        pass


plant()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(self.gemm(x) * self.multiplier, self.negative_slope)
