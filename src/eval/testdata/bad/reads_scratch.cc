#include "kforge_cpu.h"
#define ARGS const float* x = static_cast<const float*>(kf_input(a, "x")->data); float* y = static_cast<float*>(kf_output(a, "y")->data); float s = kf_attr_f(a, "scale"), b = kf_attr_f(a, "shift"); int64_t n = kf_attr_i(a, "n");
KF_EXPORT int64_t kf_scratch_bytes(const kf_cpu_args* a) { return 4096; }
KF_EXPORT int kf_run(const kf_cpu_args* a) { ARGS const unsigned char* junk = static_cast<const unsigned char*>(a->scratch); for (int64_t i = 0; i < n; ++i) y[i] = s * x[i] + b + (i == 0 ? junk[5] * 1e-3f : 0.0f); return 0; }
