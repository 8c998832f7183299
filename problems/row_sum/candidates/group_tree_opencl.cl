// `row_sum` for the opencl backend in the classic GPU shape: one work-group per row.
//
// GROUP work-items stride over the row (work-item i takes columns i, i + GROUP, ...), so one
// step of the group reads GROUP consecutive floats; the partial sums then meet in local memory
// and are added in a tree. On a GPU this is the standard layout; on PoCL's CPU device the
// strided accesses become SIMD across work-items. GROUP must be a power of two.
__kernel void row_sum_tree(__global const float* x, __global float* y, int rows, int cols) {
  __local float partial[GROUP];
  const int r = get_group_id(0);
  const int i = get_local_id(0);
  __global const float* xr = x + (size_t)r * cols;
  float sum = 0.0f;
  for (int c = i; c < cols; c += GROUP) sum += xr[c];
  partial[i] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = GROUP / 2; step > 0; step >>= 1) {
    if (i < step) partial[i] += partial[i + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (i == 0) y[r] = partial[0];
}
