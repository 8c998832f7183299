// `gemm_bias_relu` for the hip backend: the shared-memory tiled FP32 GEMM (x @ weight^T) with
// bias and ReLU fused into the store.
#include "kforge_hip.h"

// Shared-memory tiled FP32 GEMM: a 64x64 tile of C per block of 256 threads, 16-deep K
// slices staged in shared memory (A stored k-major so both operands are read along rows of the
// tile), each thread accumulating a 4x4 sub-tile strided by 16 (conflict-free shared reads).
// Out-of-range loads read 0 so any M, N, K works. FP32 FMA only: the problem is strict fp32.
constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;

// B_IS_NK: B is given as [N, K] (a weight matrix, C = A @ B^T); else as [K, N].
template <bool B_IS_NK, typename Epilogue>
__global__ void __launch_bounds__(kThreads) gemm_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                                       int M, int N, int K, Epilogue epi) {
  __shared__ float As[kBK][kBM + 4];
  __shared__ float Bs[kBK][kBN + 4];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += kBK) {
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      int idx = t + l * kThreads;
      int r = idx / kBK, kk = idx % kBK;  // A: 64 rows x 16 k, k fastest (coalesced along K)
      int gm = m0 + r, gk = k0 + kk;
      As[kk][r] = (gm < M && gk < K) ? A[(size_t)gm * K + gk] : 0.0f;
      if (B_IS_NK) {
        int c = idx / kBK, bk = idx % kBK;
        int gn = n0 + c, gk2 = k0 + bk;
        Bs[bk][c] = (gn < N && gk2 < K) ? B[(size_t)gn * K + gk2] : 0.0f;
      } else {
        int bk = idx / kBN, c = idx % kBN;  // B: 16 k x 64 cols, cols fastest
        int gn = n0 + c, gk2 = k0 + bk;
        Bs[bk][c] = (gn < N && gk2 < K) ? B[(size_t)gk2 * N + gn] : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int gm = m0 + ty + 16 * i, gn = n0 + tx + 16 * j;
      if (gm < M && gn < N) epi(gm, gn, acc[i][j]);
    }
}

struct BiasRelu {
  const float* bias;
  float* y;
  int out;
  __device__ void operator()(int i, int j, float v) const { y[(size_t)i * out + j] = fmaxf(v + bias[j], 0.0f); }
};

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int batch = (int)kf_hip_attr_i(a, "batch"), in = (int)kf_hip_attr_i(a, "in_features"),
      out = (int)kf_hip_attr_i(a, "out_features");
  if (batch == 0 || out == 0) return 0;
  dim3 grid((out + kBN - 1) / kBN, (batch + kBM - 1) / kBM);
  gemm_tiled<true><<<grid, kThreads, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (const float*)kf_hip_input(a, "weight")->data, batch, out, in,
      BiasRelu{(const float*)kf_hip_input(a, "bias")->data, (float*)kf_hip_output(a, "y")->data, out});
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
