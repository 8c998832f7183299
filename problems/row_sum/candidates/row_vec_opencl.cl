// Optimized `row_sum` for the opencl backend (tuned on PoCL's CPU device).
//
// One work-item per row, walking it with float8 loads into KF_ACCS (four) independent
// accumulators, so each row streams through one core in order with SIMD along the row and no
// serial add chain. Whole float8 vectors past the last full group of accumulators go into the
// first one, the accumulators are added pairwise, and the row tail (cols % 8) is summed
// serially.
//
// Tunable (kforge optimize): KF_ACCS, a power of two. The unroll pragmas keep the accumulator
// array in registers.
#define KF_ACCS 4  // kforge:tune [1, 2, 4, 8]

__kernel void row_sum_vec(__global const float* x, __global float* y, int rows, int cols) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + (size_t)r * cols;
  const int step = 8 * KF_ACCS;
  const int body = cols / step * step;
  const int vec_end = cols & ~7;
  float8 s[KF_ACCS];
#pragma unroll
  for (int q = 0; q < KF_ACCS; ++q) s[q] = 0.0f;
  for (int c = 0; c < body; c += step) {
#pragma unroll
    for (int q = 0; q < KF_ACCS; ++q) s[q] += vload8(0, xr + c + 8 * q);
  }
  for (int c = body; c < vec_end; c += 8) s[0] += vload8(0, xr + c);
#pragma unroll
  for (int w = KF_ACCS / 2; w > 0; w /= 2) {
#pragma unroll
    for (int q = 0; q < w; ++q) s[q] += s[q + w];
  }
  const float8 v = s[0];
  float sum = ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7));
  for (int c = vec_end; c < cols; ++c) sum += xr[c];
  y[r] = sum;
}
