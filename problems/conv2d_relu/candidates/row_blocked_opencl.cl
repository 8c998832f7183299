// Optimized `conv2d_relu` for the opencl backend (tuned on PoCL's CPU device).
//
// A work-item computes 16 consecutive outputs of row i for OCB output channels of one image,
// in 2*OCB float8 accumulators: for each (c, u, v) it loads 16 consecutive inputs of row
// i + u of channel c, shifted by v (two float8 loads), and multiplies them by one weight per
// channel. Input rows are read contiguously and reused across the OCB channels; bias + ReLU are
// applied before the store. The last block of a row is moved back to end at the row's end (its
// overlap is recomputed with identical results), so loads never run past the row; rows
// narrower than 16 take a guarded path. Channels past out_channels re-read the last one and are
// not stored. The unroll pragmas keep the accumulators in registers.
__kernel void conv2d_relu_blocked(__global const float* x, __global const float* weight,
                                  __global const float* bias, __global float* y, int batch,
                                  int in_c, int out_c, int h, int w, int k) {
  const int oh = h - k + 1, ow = w - k + 1;
  const int channel_blocks = (out_c + OCB - 1) / OCB;
  int j0 = get_global_id(0) * 16;
  const int i = get_global_id(1);
  const int b = get_global_id(2) / channel_blocks;
  const int o0 = get_global_id(2) % channel_blocks * OCB;
  if (j0 >= ow || i >= oh || b >= batch) return;
  const bool wide = ow >= 16;
  if (wide) j0 = min(j0, ow - 16);

  const int filter = in_c * k * k;
  __global const float* wo[OCB];
  float8 acc0[OCB], acc1[OCB];
#pragma unroll
  for (int r = 0; r < OCB; ++r) {
    wo[r] = weight + (size_t)min(o0 + r, out_c - 1) * filter;
    acc0[r] = acc1[r] = (float8)(0.0f);
  }

  for (int c = 0; c < in_c; ++c) {
    for (int u = 0; u < k; ++u) {
      __global const float* xrow = x + ((size_t)(b * in_c + c) * h + i + u) * w + j0;
      const int wu = (c * k + u) * k;
      for (int v = 0; v < k; ++v) {
        float8 x0, x1;
        if (wide) {
          x0 = vload8(0, xrow + v);
          x1 = vload8(1, xrow + v);
        } else {
          float tmp[16];
          for (int jj = 0; jj < 16; ++jj) tmp[jj] = j0 + jj < ow ? xrow[v + jj] : 0.0f;
          x0 = vload8(0, tmp);
          x1 = vload8(1, tmp);
        }
#pragma unroll
        for (int r = 0; r < OCB; ++r) {
          const float wt = wo[r][wu + v];
          acc0[r] += wt * x0;
          acc1[r] += wt * x1;
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < OCB; ++r) {
    if (o0 + r >= out_c) break;
    const float bo = bias[o0 + r];
    const float8 v0 = fmax(acc0[r] + bo, 0.0f), v1 = fmax(acc1[r] + bo, 0.0f);
    __global float* yr = y + ((size_t)(b * out_c + o0 + r) * oh + i) * ow + j0;
    if (wide) {
      vstore8(v0, 0, yr);
      vstore8(v1, 1, yr);
    } else {
      float tmp[16];
      vstore8(v0, 0, tmp);
      vstore8(v1, 1, tmp);
      for (int jj = 0; jj < ow - j0; ++jj) yr[jj] = tmp[jj];
    }
  }
}
