// Optimized `layernorm` for the opencl backend (tuned on PoCL's CPU device).
//
// One work-item per row, walking it with float8 loads: the row stays in that core's L1 for the
// three passes, the reductions use KF_ACCS (four) independent float8 accumulators, and
// 1/sqrt(var + eps) is applied as one multiply. Whole vectors past the last full group of
// accumulators go into the first one; row tails (cols % 8) are handled serially.
//
// Tunable (kforge optimize): KF_ACCS, a power of two; the accumulators are added pairwise. The
// unroll pragmas keep the accumulator arrays in registers.
#define KF_ACCS 4  // kforge:tune [1, 2, 4, 8]

float sum8(float8 v) { return ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7)); }

// Adds the KF_ACCS accumulators pairwise and returns the lane sum.
float reduce_accs(float8* s) {
#pragma unroll
  for (int w = KF_ACCS / 2; w > 0; w /= 2) {
#pragma unroll
    for (int q = 0; q < w; ++q) s[q] += s[q + w];
  }
  return sum8(s[0]);
}

__kernel void layernorm_rows_vec(__global const float* x, __global const float* weight,
                                 __global const float* bias, __global float* y, int rows, int cols,
                                 float eps) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + (size_t)r * cols;
  __global float* yr = y + (size_t)r * cols;
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
  float sum = reduce_accs(s);
  for (int c = vec_end; c < cols; ++c) sum += xr[c];
  const float mean = sum / cols;

#pragma unroll
  for (int q = 0; q < KF_ACCS; ++q) s[q] = 0.0f;
  for (int c = 0; c < body; c += step) {
#pragma unroll
    for (int q = 0; q < KF_ACCS; ++q) {
      const float8 d = vload8(0, xr + c + 8 * q) - mean;
      s[q] += d * d;
    }
  }
  for (int c = body; c < vec_end; c += 8) {
    const float8 d = vload8(0, xr + c) - mean;
    s[0] += d * d;
  }
  float sq = reduce_accs(s);
  for (int c = vec_end; c < cols; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
  const float rstd = 1.0f / sqrt(sq / cols + eps);

  for (int c = 0; c < vec_end; c += 8) {
    const float8 v =
        (vload8(0, xr + c) - mean) * rstd * vload8(0, weight + c) + vload8(0, bias + c);
    vstore8(v, 0, yr + c);
  }
  for (int c = vec_end; c < cols; ++c) yr[c] = (xr[c] - mean) * rstd * weight[c] + bias[c];
}
