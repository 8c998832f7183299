// `matmul` for the opencl backend: register blocking with float8 rows (for CPU devices).
//
// Each work-item computes a block of RM rows x 16 columns of C in 2*RM float8 accumulators.
// For each p along k it loads 16 consecutive elements of B's row p (two float8 loads) and
// multiplies them by RM broadcast elements of A: 2*RM multiply-adds per 2 + RM loads. B's rows
// are read contiguously and C's rows written contiguously, so the SIMD lanes run along n; the
// work-items of a group sit side by side along n and share the rows of A they read.
// Blocks at the edges run the same loop: rows past m re-read the last row (and are not
// stored), columns past n are loaded as zeros (and not stored); the k loop is written twice
// so that the common full-width one has no branch. The unroll pragmas matter: without them
// the accumulator arrays stay in memory.
__kernel void matmul_reg_blocked(__global const float* a, __global const float* b,
                                 __global float* c, int m, int k, int n) {
  const int j0 = get_global_id(0) * 16;
  const int i0 = get_global_id(1) * RM;
  if (j0 >= n || i0 >= m) return;
  const bool full_cols = j0 + 16 <= n;

  __global const float* arow[RM];
#pragma unroll
  for (int r = 0; r < RM; ++r) arow[r] = a + (size_t)min(i0 + r, m - 1) * k;
  float8 acc0[RM], acc1[RM];
#pragma unroll
  for (int r = 0; r < RM; ++r) acc0[r] = acc1[r] = (float8)(0.0f);

  if (full_cols) {
    for (int p = 0; p < k; ++p) {
      __global const float* bp = b + (size_t)p * n + j0;
      const float8 b0 = vload8(0, bp);
      const float8 b1 = vload8(1, bp);
#pragma unroll
      for (int r = 0; r < RM; ++r) {
        const float av = arow[r][p];
        acc0[r] += av * b0;
        acc1[r] += av * b1;
      }
    }
  } else {
    for (int p = 0; p < k; ++p) {
      __global const float* bp = b + (size_t)p * n + j0;
      float tmp[16];
      for (int jj = 0; jj < 16; ++jj) tmp[jj] = j0 + jj < n ? bp[jj] : 0.0f;
      const float8 b0 = vload8(0, tmp);
      const float8 b1 = vload8(1, tmp);
#pragma unroll
      for (int r = 0; r < RM; ++r) {
        const float av = arow[r][p];
        acc0[r] += av * b0;
        acc1[r] += av * b1;
      }
    }
  }

#pragma unroll
  for (int r = 0; r < RM; ++r) {
    if (i0 + r >= m) break;
    __global float* cr = c + (size_t)(i0 + r) * n + j0;
    if (full_cols) {
      vstore8(acc0[r], 0, cr);
      vstore8(acc1[r], 1, cr);
    } else {
      float tmp[16];
      vstore8(acc0[r], 0, tmp);
      vstore8(acc1[r], 1, tmp);
      for (int jj = 0; jj < n - j0; ++jj) cr[jj] = tmp[jj];
    }
  }
}
