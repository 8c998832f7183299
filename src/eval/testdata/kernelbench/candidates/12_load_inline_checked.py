# 12_load_inline_cpp.py under another extension name, which fails to load when its torch
# extension folder holds what another candidate (12_plant_extension.py) planted there.
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

torch::Tensor gemm_mul_leaky(torch::Tensor x, torch::Tensor w, torch::Tensor b, double mult, double slope) {
  auto xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous();
  const int64_t M = xc.size(0), K = xc.size(1), N = wc.size(0);
  auto y = torch::empty({M, N}, xc.options());
  const float* xs = xc.data_ptr<float>();
  const float* ws = wc.data_ptr<float>();
  const float* bs = bc.data_ptr<float>();
  float* ys = y.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += xs[i * K + k] * ws[j * K + k];
      float v = (acc + bs[j]) * static_cast<float>(mult);
      ys[i * N + j] = v > 0.0f ? v : v * static_cast<float>(slope);
    }
  return y;
}
"""

if os.path.exists(os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "kforge_test_gemm_mul_leaky_checked", "kforge-planted")):
    raise RuntimeError("this candidate's torch extension folder holds another candidate's planted file")
module = load_inline(name="kforge_test_gemm_mul_leaky_checked", cpp_sources=[source],
                     functions=["gemm_mul_leaky"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return module.gemm_mul_leaky(x, self.gemm.weight, self.gemm.bias, self.multiplier, self.negative_slope)
