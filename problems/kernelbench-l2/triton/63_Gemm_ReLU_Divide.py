# KernelBench level 2, 63_Gemm_ReLU_Divide: relu(x W^T + b) / divisor.
# A ModelNew with one Triton kernel: the GEMM with the whole tail fused into its epilogue, so
# the output is written once. The FP32 product uses Triton's "tf32x3" tensor-core mode (each
# operand split into a TF32 high and low part, three TF32 products summed in FP32), which
# keeps FP32-level accuracy (it passes kforge's 1e-4 check against a float64 reference) while
# running on the tensor cores; plain TF32 would not pass. Tiles are fixed (128x128x32, 8 warps,
# 3 stages), tuned by hand for an H100/H200-class GPU at KernelBench's sizes.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_tail(x, w, bias_ptr, y, M, N, K, p0, p1,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(x + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(w + rn[None, :] * K + (k + rk)[:, None],
                    mask=(rn[None, :] < N) & ((k + rk)[:, None] < K), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0) / p0
    tl.store(y + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        w = self.linear.weight
        N = w.shape[0]
        y = torch.empty(M, N, device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
        gemm_tail[grid](x, w, self.linear.bias, y, M, N, K, self.divisor, 0.0,
                        BM=128, BN=128, BK=32, PRECISION="tf32x3", num_warps=8, num_stages=3)
        return y
