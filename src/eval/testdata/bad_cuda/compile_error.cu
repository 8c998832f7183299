#include "kforge_cuda.h"
KF_EXPORT int kf_cuda_run(const kf_cuda_args* a) {
  return undeclared_symbol(a);
}
