// `row_sum` for the opencl backend in the classic GPU shape: one work-group per row.
//
// GROUP work-items stride over the row in vectors of KF_VEC floats (work-item i takes vectors
// i, i + GROUP, ...), so one step of the group reads GROUP * KF_VEC consecutive floats; the
// partial sums then meet in local memory and are added in a tree. The last cols % KF_VEC
// floats (fewer than GROUP) are added by one work-item each. On a GPU this is the standard
// layout; on PoCL's CPU device the strided accesses become SIMD across work-items. GROUP must
// be a power of two of at least 8.
//
// Tunable (kforge optimize): KF_VEC, the load width (1, 2, 4 or 8 floats per load).
#define KF_VEC 1  // kforge:tune [1, 2, 4, 8]

#if KF_VEC == 1
typedef float floatv;
#define LOADV(i, p) ((p)[i])
#define HSUM(v) (v)
#elif KF_VEC == 2
typedef float2 floatv;
#define LOADV(i, p) vload2(i, p)
#define HSUM(v) ((v).s0 + (v).s1)
#elif KF_VEC == 4
typedef float4 floatv;
#define LOADV(i, p) vload4(i, p)
#define HSUM(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#elif KF_VEC == 8
typedef float8 floatv;
#define LOADV(i, p) vload8(i, p)
#define HSUM(v) ((((v).s0 + (v).s1) + ((v).s2 + (v).s3)) + (((v).s4 + (v).s5) + ((v).s6 + (v).s7)))
#else
#error "KF_VEC must be 1, 2, 4 or 8"
#endif

__kernel void row_sum_tree(__global const float* x, __global float* y, int rows, int cols) {
  __local float partial[GROUP];
  const int r = get_group_id(0);
  const int i = get_local_id(0);
  __global const float* xr = x + (size_t)r * cols;
  const int vecs = cols / KF_VEC;
  floatv acc = (floatv)(0.0f);
  for (int v = i; v < vecs; v += GROUP) acc += LOADV(v, xr);
  float sum = HSUM(acc);
  if (vecs * KF_VEC + i < cols) sum += xr[vecs * KF_VEC + i];
  partial[i] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int step = GROUP / 2; step > 0; step >>= 1) {
    if (i < step) partial[i] += partial[i + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (i == 0) y[r] = partial[0];
}
