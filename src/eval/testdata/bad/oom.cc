#include "kforge_cpu.h"
#define ARGS const float* x = static_cast<const float*>(kf_input(a, "x")->data); float* y = static_cast<float*>(kf_output(a, "y")->data); float s = kf_attr_f(a, "scale"), b = kf_attr_f(a, "shift"); int64_t n = kf_attr_i(a, "n");
#include <cstdlib>
#include <cstring>
KF_EXPORT int kf_run(const kf_cpu_args* a) { ARGS for (int k = 0; k < 1000; ++k) { char* p = static_cast<char*>(std::malloc(1 << 30)); if (!p) __builtin_trap(); std::memset(p, 1, 1 << 30); } return 0; }
