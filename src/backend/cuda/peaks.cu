// Peak-rate kernels for the speed-of-light gate on CUDA devices. Compiled to PTX at build time
// (nvcc -ptx -arch=compute_80), embedded in kforge-worker as a string and loaded with
// cuModuleLoadData, so the worker itself needs no CUDA toolkit at run time.
//
//   kf_copy      streaming float4 copy (bandwidth: read + write bytes)
//   kf_fma       8 independent FMA chains per thread (FP32 rate, 2 flops per FMA)
//   kf_mma_bf16  mma.sync m16n8k16 bf16 -> fp32, 4 independent accumulators per warp
//                (a tensor-core rate reachable from CUDA C; wgmma on Hopper goes higher)

extern "C" __global__ void kf_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                   unsigned long long n) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
}

extern "C" __global__ void kf_fma(float* out, float a, float b, int iters) {
  float x[8];
#pragma unroll
  for (int k = 0; k < 8; ++k) x[k] = threadIdx.x * 1e-3f + k;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = fmaf(x[k], a, b);
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 8; ++k) s += x[k];
  if (s == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the loop alive
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
extern "C" __global__ void kf_mma_bf16(float* out, unsigned seed, int iters) {
  unsigned a0 = seed ^ threadIdx.x, a1 = a0 * 3u, a2 = a0 * 5u, a3 = a0 * 7u;
  unsigned b0 = seed + threadIdx.x, b1 = b0 * 11u;
  float c[4][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
#endif
