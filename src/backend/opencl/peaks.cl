// kforge's own OpenCL kernels for measuring a device's peaks.

// Copies `n` float4 values from src to dst, one per work-item: the bandwidth probe.
__kernel void kf_copy(__global const float4* src, __global float4* dst, ulong n) {
  size_t k = get_global_id(0);
  if (k < n) dst[k] = src[k];
}

// Sixteen independent FMA chains of float4 per work-item: the arithmetic probe.
// Each work-item does 16 * 4 * iters FMAs (2 flops each).
__kernel void kf_fma(__global float* out, float a, float b, int iters) {
  float4 acc[16];
  for (int k = 0; k < 16; ++k) acc[k] = (float4)(get_global_id(0) * 1e-6f + k);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < 16; ++k) acc[k] = fma(acc[k], (float4)(a), (float4)(b));
  }
  float4 s = (float4)(0.0f);
  for (int k = 0; k < 16; ++k) s += acc[k];
  out[get_global_id(0)] = s.x + s.y + s.z + s.w;
}

// Reads `n` float4 values, each work-item summing a contiguous chunk: the read-bandwidth probe
// (a copy pays for the destination too, so it understates what a reduction can reach).
__kernel void kf_read(__global const float4* src, __global float* out, ulong n, ulong chunk) {
  size_t g = get_global_id(0);
  ulong begin = g * chunk, end = min(begin + chunk, n);
  float4 acc = (float4)(0.0f);
  for (ulong k = begin; k < end; ++k) acc += src[k];
  out[g] = acc.x + acc.y + acc.z + acc.w;
}
