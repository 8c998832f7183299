// Optimized `gemm_scale_gelu_residual` for the opencl backend (tuned on PoCL's CPU device).
//
// Each work-item computes a block of RM batch rows x RN output features. Both x's rows and
// weight's rows are contiguous along in_features, so the block is RM*RN dot products walked
// together with float8 loads along p: per 8 values of p, RM + RN vector loads feed RM*RN
// vector multiply-adds, and no transposed copy of weight is needed. The float8 partial sums
// are reduced at the end, the p tail (in_features % 8) is added serially, and the tail (bias,
// scale, tanh-GELU written as z / (1 + exp(-2u)), residual) is applied before the only store. Rows
// and features past the edges re-read the last valid one and are not stored. The unroll pragmas
// keep the accumulators in registers.
float sum8(float8 v) { return ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7)); }

// gelu_tanh(z) = 0.5 * z * (1 + tanh(u)) = z / (1 + exp(-2u)), u = sqrt(2/pi) (z + 0.044715 z^3).
// For very negative z, exp overflows to +inf and the quotient is -0, the correct limit.
float gelu_tanh(float z) {
  const float u = 0.7978845608028654f * (z + 0.044715f * z * z * z);
  return z / (1.0f + exp(-2.0f * u));
}

__kernel void gemm_scale_gelu_residual_blocked(__global const float* x,
                                               __global const float* weight,
                                               __global const float* bias,
                                               __global const float* residual, __global float* y,
                                               int batch, int in, int out, float scale) {
  const int j0 = get_global_id(0) * RN;
  const int i0 = get_global_id(1) * RM;
  if (j0 >= out || i0 >= batch) return;

  __global const float* xr[RM];
  __global const float* wr[RN];
#pragma unroll
  for (int r = 0; r < RM; ++r) xr[r] = x + (size_t)min(i0 + r, batch - 1) * in;
#pragma unroll
  for (int c = 0; c < RN; ++c) wr[c] = weight + (size_t)min(j0 + c, out - 1) * in;

  float8 acc[RM][RN];
#pragma unroll
  for (int r = 0; r < RM; ++r) {
#pragma unroll
    for (int c = 0; c < RN; ++c) acc[r][c] = (float8)(0.0f);
  }
  const int body = in & ~7;
  for (int p = 0; p < body; p += 8) {
    float8 xv[RM], wv[RN];
#pragma unroll
    for (int r = 0; r < RM; ++r) xv[r] = vload8(0, xr[r] + p);
#pragma unroll
    for (int c = 0; c < RN; ++c) wv[c] = vload8(0, wr[c] + p);
#pragma unroll
    for (int r = 0; r < RM; ++r) {
#pragma unroll
      for (int c = 0; c < RN; ++c) acc[r][c] += xv[r] * wv[c];
    }
  }

#pragma unroll
  for (int r = 0; r < RM; ++r) {
    if (i0 + r >= batch) break;
#pragma unroll
    for (int c = 0; c < RN; ++c) {
      if (j0 + c >= out) break;
      float sum = sum8(acc[r][c]);
      for (int p = body; p < in; ++p) sum += xr[r][p] * wr[c][p];
      const size_t at = (size_t)(i0 + r) * out + j0 + c;
      y[at] = gelu_tanh(scale * (sum + bias[j0 + c])) + residual[at];
    }
  }
}
