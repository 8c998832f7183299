# A KernelBench-format candidate with a Triton kernel: GEMM + bias, multiplier and LeakyReLU
# fused in the epilogue. On a GPU it compiles; on the CPU kforge runs it in Triton's interpreter.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_epilogue(x, w, b, y, M, N, K, mult, slope,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(x + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        bt = tl.load(w + rn[None, :] * K + (k + rk)[:, None],
                     mask=(rn[None, :] < N) & ((k + rk)[:, None] < K), other=0.0)
        acc += tl.dot(a, bt, allow_tf32=False)
    acc += tl.load(b + rn, mask=rn < N, other=0.0)[None, :]
    acc = acc * mult
    acc = tl.where(acc > 0, acc, acc * slope)
    tl.store(y + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        M, K = x.shape
        N = self.gemm.weight.shape[0]
        y = torch.empty(M, N, device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        gemm_epilogue[grid](x, self.gemm.weight, self.gemm.bias, y, M, N, K,
                            self.multiplier, self.negative_slope, BM=64, BN=64, BK=32)
        return y
