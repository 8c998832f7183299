// Broken on purpose: a kernel that never ends (it waits for a value no one writes; the reads
// are volatile, so the compiler must keep the loop). The worker's wall-clock limit kills it;
// the verdict is timeout.
#include "kforge_cuda.h"

__global__ void spin(float* y) {
  volatile float* p = y;
  while (p[0] != 12345.0f) {
  }
}

KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  spin<<<1, 1, 0, a->stream>>>((float*)kf_cuda_output(a, "y")->data);
  return 0;
}
