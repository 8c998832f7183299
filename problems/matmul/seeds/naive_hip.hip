// Naive `matmul` for the hip backend: one thread per output element, c = a @ b.
#include "kforge_hip.h"

__global__ void matmul(const float* a, const float* b, float* c, int m, int k, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  float s = 0.0f;
  for (int p = 0; p < k; ++p) s += a[(size_t)i * k + p] * b[(size_t)p * n + j];
  c[(size_t)i * n + j] = s;
}

KF_EXPORT int kf_hip_run(const kf_hip_args* a) {
  int m = (int)kf_hip_attr_i(a, "m"), k = (int)kf_hip_attr_i(a, "k"), n = (int)kf_hip_attr_i(a, "n");
  if (m == 0 || n == 0) return 0;
  dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  matmul<<<grid, block, 0, a->stream>>>((const float*)kf_hip_input(a, "a")->data,
                                        (const float*)kf_hip_input(a, "b")->data,
                                        (float*)kf_hip_output(a, "c")->data, m, k, n);
  KF_HIP_CHECK_LAUNCH(a);
  return 0;
}
