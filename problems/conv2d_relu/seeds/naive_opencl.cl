// Naive `conv2d_relu` for the opencl backend: one work-item per output element.
__kernel void conv2d_relu(__global const float* x, __global const float* weight,
                          __global const float* bias, __global float* y, int batch, int in_c,
                          int out_c, int h, int w, int k) {
  const int oh = h - k + 1, ow = w - k + 1;
  const int j = get_global_id(0);
  const int i = get_global_id(1);
  const int bo = get_global_id(2);  // b * out_c + o
  if (j >= ow || i >= oh || bo >= batch * out_c) return;
  const int b = bo / out_c, o = bo % out_c;
  float sum = 0.0f;
  for (int c = 0; c < in_c; ++c)
    for (int u = 0; u < k; ++u)
      for (int v = 0; v < k; ++v)
        sum +=
            x[((b * in_c + c) * h + i + u) * w + j + v] * weight[((o * in_c + c) * k + u) * k + v];
  y[(bo * oh + i) * ow + j] = fmax(sum + bias[o], 0.0f);
}
