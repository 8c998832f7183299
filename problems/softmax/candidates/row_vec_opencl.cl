// Optimized `softmax` for the opencl backend (tuned on PoCL's CPU device).
//
// One work-item owns one row and walks it with float8 loads, so each row streams through one
// core's cache in order and the SIMD lanes run along the row (instead of across rows, which is
// what the compiler's implicit work-item vectorization would do with strided accesses). The
// row's tail (cols % 8) is handled by a scalar loop. Work-groups hold ROWS_PER_GROUP rows.
__kernel void softmax_rows_vec(__global const float* x, __global float* y, int rows, int cols) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + (size_t)r * cols;
  __global float* yr = y + (size_t)r * cols;
  const int vec_end = cols & ~7;

  float8 m8 = (float8)(-INFINITY);
  for (int c = 0; c < vec_end; c += 8) m8 = fmax(m8, vload8(0, xr + c));
  float m = fmax(fmax(fmax(m8.s0, m8.s1), fmax(m8.s2, m8.s3)),
                 fmax(fmax(m8.s4, m8.s5), fmax(m8.s6, m8.s7)));
  for (int c = vec_end; c < cols; ++c) m = fmax(m, xr[c]);

  float8 s8 = (float8)(0.0f);
  for (int c = 0; c < vec_end; c += 8) {
    const float8 e = exp(vload8(0, xr + c) - m);
    vstore8(e, 0, yr + c);
    s8 += e;
  }
  float sum = ((s8.s0 + s8.s1) + (s8.s2 + s8.s3)) + ((s8.s4 + s8.s5) + (s8.s6 + s8.s7));
  for (int c = vec_end; c < cols; ++c) {
    const float e = exp(xr[c] - m);
    yr[c] = e;
    sum += e;
  }

  const float inv = 1.0f / sum;
  for (int c = 0; c < vec_end; c += 8) vstore8(vload8(0, yr + c) * inv, 0, yr + c);
  for (int c = vec_end; c < cols; ++c) yr[c] *= inv;
}
