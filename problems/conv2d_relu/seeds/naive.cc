// Naive `conv2d_relu` for the cpp backend: one thread, one sum over (c, u, v) per output.
#include "kforge_cpu.h"

KF_EXPORT int kf_run(const kf_cpu_args* a) {
  const float* x = static_cast<const float*>(kf_input(a, "x")->data);
  const float* weight = static_cast<const float*>(kf_input(a, "weight")->data);
  const float* bias = static_cast<const float*>(kf_input(a, "bias")->data);
  float* y = static_cast<float*>(kf_output(a, "y")->data);
  const int64_t batch = kf_attr_i(a, "batch");
  const int64_t in_c = kf_attr_i(a, "in_channels");
  const int64_t out_c = kf_attr_i(a, "out_channels");
  const int64_t h = kf_attr_i(a, "height");
  const int64_t w = kf_attr_i(a, "width");
  const int64_t k = kf_attr_i(a, "kernel");
  const int64_t oh = h - k + 1, ow = w - k + 1;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t o = 0; o < out_c; ++o) {
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          float sum = 0.0f;
          for (int64_t c = 0; c < in_c; ++c)
            for (int64_t u = 0; u < k; ++u)
              for (int64_t v = 0; v < k; ++v)
                sum += x[((b * in_c + c) * h + i + u) * w + j + v] *
                       weight[((o * in_c + c) * k + u) * k + v];
          sum += bias[o];
          y[((b * out_c + o) * oh + i) * ow + j] = sum > 0.0f ? sum : 0.0f;
        }
      }
    }
  }
  return 0;
}
