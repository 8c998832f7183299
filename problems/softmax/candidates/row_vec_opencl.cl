// Optimized `softmax` for the opencl backend (tuned on PoCL's CPU device).
//
// One work-item owns one row and walks it with float8 loads, so each row streams through one
// core's cache in order and the SIMD lanes run along the row (instead of across rows, which is
// what the compiler's implicit work-item vectorization would do with strided accesses). The
// row's tail (cols % 8) is handled by a scalar loop. Work-groups hold KF_ROWS_PER_GROUP rows
// (set by the host).
//
// Tunable (kforge optimize): the max and exp passes take KF_UNROLL float8 vectors per
// iteration (a power of two) with as many independent max / sum accumulators, added pairwise at
// the end; whole vectors left over go through the first accumulator. The unroll pragmas keep
// the accumulator arrays in registers.
#define KF_UNROLL 1  // kforge:tune [1, 2, 4]

__kernel void softmax_rows_vec(__global const float* x, __global float* y, int rows, int cols) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + (size_t)r * cols;
  __global float* yr = y + (size_t)r * cols;
  const int vec_end = cols & ~7;

  const int step = 8 * KF_UNROLL;
  const int unrolled = cols / step * step;

  float8 m8[KF_UNROLL];
#pragma unroll
  for (int q = 0; q < KF_UNROLL; ++q) m8[q] = (float8)(-INFINITY);
  for (int c = 0; c < unrolled; c += step) {
#pragma unroll
    for (int q = 0; q < KF_UNROLL; ++q) m8[q] = fmax(m8[q], vload8(0, xr + c + 8 * q));
  }
  for (int c = unrolled; c < vec_end; c += 8) m8[0] = fmax(m8[0], vload8(0, xr + c));
#pragma unroll
  for (int q = 1; q < KF_UNROLL; ++q) m8[0] = fmax(m8[0], m8[q]);
  float m = fmax(fmax(fmax(m8[0].s0, m8[0].s1), fmax(m8[0].s2, m8[0].s3)),
                 fmax(fmax(m8[0].s4, m8[0].s5), fmax(m8[0].s6, m8[0].s7)));
  for (int c = vec_end; c < cols; ++c) m = fmax(m, xr[c]);

  float8 s8[KF_UNROLL];
#pragma unroll
  for (int q = 0; q < KF_UNROLL; ++q) s8[q] = (float8)(0.0f);
  for (int c = 0; c < unrolled; c += step) {
#pragma unroll
    for (int q = 0; q < KF_UNROLL; ++q) {
      const float8 e = exp(vload8(0, xr + c + 8 * q) - m);
      vstore8(e, 0, yr + c + 8 * q);
      s8[q] += e;
    }
  }
  for (int c = unrolled; c < vec_end; c += 8) {
    const float8 e = exp(vload8(0, xr + c) - m);
    vstore8(e, 0, yr + c);
    s8[0] += e;
  }
#pragma unroll
  for (int w = KF_UNROLL / 2; w > 0; w /= 2) {
#pragma unroll
    for (int q = 0; q < w; ++q) s8[q] += s8[q + w];
  }
  const float8 sv = s8[0];
  float sum = ((sv.s0 + sv.s1) + (sv.s2 + sv.s3)) + ((sv.s4 + sv.s5) + (sv.s6 + sv.s7));
  for (int c = vec_end; c < cols; ++c) {
    const float e = exp(xr[c] - m);
    yr[c] = e;
    sum += e;
  }

  const float inv = 1.0f / sum;
  for (int c = 0; c < vec_end; c += 8) vstore8(vload8(0, yr + c) * inv, 0, yr + c);
  for (int c = vec_end; c < cols; ++c) yr[c] *= inv;
}
