// Naive `conv2d_relu` for the hip backend: one thread per output element (valid convolution,
// stride 1), y = relu(conv(x, weight) + bias).
#include "kforge_hip.h"

__global__ void conv2d_relu(const float* x, const float* w, const float* bias, float* y, int batch,
                            int in_c, int out_c, int h, int wd, int k) {
  int oh = h - k + 1, ow = wd - k + 1;
  long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long total = (long long)batch * out_c * oh * ow;
  if (idx >= total) return;
  int j = (int)(idx % ow), i = (int)(idx / ow % oh), o = (int)(idx / ((long long)ow * oh) % out_c);
  int b = (int)(idx / ((long long)ow * oh * out_c));
  float s = 0.0f;
  for (int c = 0; c < in_c; ++c)
    for (int u = 0; u < k; ++u)
      for (int v = 0; v < k; ++v)
        s += x[(((size_t)b * in_c + c) * h + i + u) * wd + j + v] * w[(((size_t)o * in_c + c) * k + u) * k + v];
  y[idx] = fmaxf(s + bias[o], 0.0f);
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int batch = (int)kf_hip_attr_i(a, "batch"), in_c = (int)kf_hip_attr_i(a, "in_channels"),
      out_c = (int)kf_hip_attr_i(a, "out_channels"), h = (int)kf_hip_attr_i(a, "height"),
      wd = (int)kf_hip_attr_i(a, "width"), k = (int)kf_hip_attr_i(a, "kernel");
  long long total = (long long)batch * out_c * (h - k + 1) * (wd - k + 1);
  if (total <= 0) return 0;
  conv2d_relu<<<(unsigned)((total + 255) / 256), 256, 0, a->stream>>>(
      (const float*)kf_hip_input(a, "x")->data, (const float*)kf_hip_input(a, "weight")->data,
      (const float*)kf_hip_input(a, "bias")->data, (float*)kf_hip_output(a, "y")->data, batch, in_c,
      out_c, h, wd, k);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
