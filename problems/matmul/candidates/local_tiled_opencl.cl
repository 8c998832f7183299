// `matmul` for the opencl backend: square tiles of A and B staged in local memory.
//
// A work-group computes a TS x TS tile of C with TS x (TS / WPT) work-items; work-item (tx, ty)
// owns column tx and the WPT rows ty, ty + TS/WPT, ... of the tile. For each TS-wide step
// along k, the group copies one TS x TS tile of A and one of B into local memory (zero-filled
// past the matrix edges, so partial tiles need no special case in the inner loop), and every
// work-item then reads B's tile along its row, which on PoCL's CPU device becomes SIMD loads
// across neighbouring work-items, with A's elements broadcast.
#define RTS (TS / WPT)

__kernel __attribute__((reqd_work_group_size(TS, RTS, 1))) void matmul_local_tiled(
    __global const float* a, __global const float* b, __global float* c, int m, int k, int n) {
  __local float a_tile[TS][TS];
  __local float b_tile[TS][TS];
  const int tx = get_local_id(0);
  const int ty = get_local_id(1);
  const int col = get_group_id(0) * TS + tx;
  const int row0 = get_group_id(1) * TS + ty;
  float acc[WPT];
  for (int r = 0; r < WPT; ++r) acc[r] = 0.0f;

  for (int t = 0; t < k; t += TS) {
    for (int r = 0; r < WPT; ++r) {
      const int lr = ty + r * RTS;
      const int arow = get_group_id(1) * TS + lr;
      a_tile[lr][tx] = (arow < m && t + tx < k) ? a[(size_t)arow * k + t + tx] : 0.0f;
      b_tile[lr][tx] = (t + lr < k && col < n) ? b[(size_t)(t + lr) * n + col] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int p = 0; p < TS; ++p) {
      const float bv = b_tile[p][tx];
      for (int r = 0; r < WPT; ++r) acc[r] += a_tile[ty + r * RTS][p] * bv;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }

  if (col < n) {
    for (int r = 0; r < WPT; ++r) {
      const int row = row0 + r * RTS;
      if (row < m) c[(size_t)row * n + col] = acc[r];
    }
  }
}
