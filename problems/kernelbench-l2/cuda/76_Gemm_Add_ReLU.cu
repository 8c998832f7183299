// KernelBench level 2, 76_Gemm_Add_ReLU: relu(x W^T + bias) (the Linear has no bias; a separate bias parameter).
// A native kforge cuda candidate: the model's parameters arrive as named inputs
// (gemm_weight, bias) and its constants as attributes. One kernel: an FP32 SGEMM (128x128 tile
// per 256-thread block, 8-deep K slices in shared memory stored k-major, an 8x8 register tile
// per thread read as float4s) with the tail fused into the store. FP32 FMA only, no tensor
// cores: the problem is checked in FP32 against a float64 reference.
#include <cmath>

#include "kforge_cuda.h"

namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8, kThreads = 256;

struct Tail {
  const float* bias;
  float p0, p1;
  __device__ float operator()(float acc, int col) const {
    const float b = bias[col];
    return fmaxf(acc + b, 0.0f);
  }
};

// C[m, n] = tail(sum_k A[m, k] * B[n, k]): A is [M, K], B is [N, K] (nn.Linear's weight).
__global__ void __launch_bounds__(kThreads) sgemm_nt(const float* __restrict__ A, const float* __restrict__ B,
                                                     float* __restrict__ C, int M, int N, int K, Tail tail) {
  __shared__ __align__(16) float As[kBK][kBM + 4];
  __shared__ __align__(16) float Bs[kBK][kBN + 4];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < K; k0 += kBK) {
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int idx = t + l * kThreads, r = idx / kBK, kk = idx % kBK, gk = k0 + kk;
      const int gm = m0 + r, gn = n0 + r;
      As[kk][r] = (gm < M && gk < K) ? A[(size_t)gm * K + gk] : 0.0f;
      Bs[kk][r] = (gn < N && gk < K) ? B[(size_t)gn * K + gk] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[kk][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[kk][ty * 4 + 64]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4 + 64]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int gm = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    if (gm >= M) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int gn = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
      if (gn < N) C[(size_t)gm * N + gn] = tail(acc[i][j], gn);
    }
  }
}

}  // namespace

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  const kf_cuda_tensor* x = kf_cuda_input(a, "x");
  const kf_cuda_tensor* w = kf_cuda_input(a, "gemm_weight");
  const int M = (int)x->shape[0], K = (int)x->shape[1], N = (int)w->shape[0];
  if (M == 0 || N == 0) return 0;
  Tail tail{(const float*)kf_cuda_input(a, "bias")->data, 0.0f, 0.0f};
  dim3 grid((N + kBN - 1) / kBN, (M + kBM - 1) / kBM);
  sgemm_nt<<<grid, kThreads, 0, a->stream>>>((const float*)x->data, (const float*)w->data,
                                             (float*)kf_cuda_output(a, "out")->data, M, N, K, tail);
  KF_CUDA_CHECK_LAUNCH(a);
  return 0;
}
