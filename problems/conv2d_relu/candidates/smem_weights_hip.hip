// `conv2d_relu` for the hip backend: one block per (image, output channel, 8-row strip); the
// channel's filter (in_channels * k * k floats) is staged in shared memory once per block,
// threads along a row read consecutive inputs (coalesced), and each thread produces two outputs
// 32 columns apart to reuse the filter registers. Falls back to reading the filter from global
// memory when it does not fit in 48 KiB of shared memory.
#include "kforge_hip.h"

constexpr int kTX = 32, kTY = 8;

template <bool kShared>
__global__ void __launch_bounds__(kTX * kTY) conv2d_relu_tiled(const float* __restrict__ x, const float* __restrict__ w,
                                                               const float* __restrict__ bias, float* __restrict__ y,
                                                               int in_c, int out_c, int h, int wd, int k) {
  extern __shared__ float ws[];
  const int oh = h - k + 1, ow = wd - k + 1;
  const int o = blockIdx.y % out_c, b = blockIdx.y / out_c;
  const int taps = in_c * k * k;
  const float* wo = w + (size_t)o * taps;
  if (kShared) {
    for (int t = threadIdx.y * kTX + threadIdx.x; t < taps; t += kTX * kTY) ws[t] = wo[t];
    __syncthreads();
  }
  const float* f = kShared ? ws : wo;
  const int i = blockIdx.x * kTY + threadIdx.y;
  if (i >= oh) return;
  const float bo = bias[o];
  for (int j0 = threadIdx.x; j0 < ow; j0 += 2 * kTX) {
    const int j1 = j0 + kTX;
    const bool has1 = j1 < ow;
    float s0 = 0.0f, s1 = 0.0f;
    for (int c = 0; c < in_c; ++c) {
      const float* xc = x + (((size_t)b * in_c + c) * h + i) * wd;
      const float* fc = f + c * k * k;
      for (int u = 0; u < k; ++u) {
        const float* xr = xc + (size_t)u * wd;
        for (int v = 0; v < k; ++v) {
          float fv = fc[u * k + v];
          s0 = fmaf(xr[j0 + v], fv, s0);
          if (has1) s1 = fmaf(xr[j1 + v], fv, s1);
        }
      }
    }
    float* yr = y + (((size_t)b * out_c + o) * oh + i) * ow;
    yr[j0] = fmaxf(s0 + bo, 0.0f);
    if (has1) yr[j1] = fmaxf(s1 + bo, 0.0f);
  }
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int batch = (int)kf_hip_attr_i(a, "batch"), in_c = (int)kf_hip_attr_i(a, "in_channels"),
      out_c = (int)kf_hip_attr_i(a, "out_channels"), h = (int)kf_hip_attr_i(a, "height"),
      wd = (int)kf_hip_attr_i(a, "width"), k = (int)kf_hip_attr_i(a, "kernel");
  int oh = h - k + 1, ow = wd - k + 1;
  if (batch <= 0 || out_c <= 0 || oh <= 0 || ow <= 0) return 0;
  const float* x = (const float*)kf_hip_input(a, "x")->data;
  const float* w = (const float*)kf_hip_input(a, "weight")->data;
  const float* bias = (const float*)kf_hip_input(a, "bias")->data;
  float* y = (float*)kf_hip_output(a, "y")->data;
  dim3 block(kTX, kTY), grid((oh + kTY - 1) / kTY, batch * out_c);
  size_t smem = (size_t)in_c * k * k * sizeof(float);
  if (smem <= 48 * 1024)
    conv2d_relu_tiled<true><<<grid, block, smem, a->stream>>>(x, w, bias, y, in_c, out_c, h, wd, k);
  else
    conv2d_relu_tiled<false><<<grid, block, 0, a->stream>>>(x, w, bias, y, in_c, out_c, h, wd, k);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
