// The cute backend: CuTe DSL kernels (NVIDIA's CUTLASS Python DSL, `@cute.kernel` and
// `@cute.jit` functions) in a Python module with kf_run, judged in the Python worker on an
// NVIDIA GPU. The DSL has no CPU mode: without a CUDA device the judge and the doctor say so.
#include "backend/registry.h"

namespace kforge {

BackendSpec CuteSpec() {
  BackendSpec b =
      PythonHostedSpec("cute",
                       "CuTe DSL kernels (CUTLASS's Python DSL) in a Python module with kf_run; "
                       "NVIDIA GPUs only (the DSL has no CPU mode)");
  b.python_module = "cutlass";
  // About 300 MB installed (the DSL's compiler is one 190 MB library), so scripts/setup leaves
  // it out unless asked (docs/dependencies.md).
  b.python_module_install =
      "pip install nvidia-cutlass-dsl into it (a venv made with --system-site-packages keeps "
      "PyTorch; KFORGE_CUTE=1 scripts/setup makes /opt/kforge/cute-venv)";
  b.gpu_required = true;
  // @cute.kernel functions are the device kernels (@cute.jit ones run on the host and launch
  // them); the DSL names a kernel kernel_cutlass_<function>_<argument types>_<n>.
  b.kernel_decorators = {"cute.kernel"};
  b.kernel_name_prefix = "kernel_cutlass_";
  // cute.compile raises this for a kernel that does not compile (its message shows the
  // candidate's line with a caret; checked with CuTe DSL 4.8.1 and testdata/does_not_compile.py).
  b.first_call_compile_errors = {"cutlass.base_dsl:DSLUserCodeError"};
  // The DSL's math takes its fast variants as keyword arguments (cute.math.exp(x, fastmath=True)).
  b.deny.push_back({R"(\b(fastmath|approx|ftz)\s*=\s*(True|1)\b)",
                    "uses approximate or flush-to-zero math (fast-math is policed per problem)"});
  return b;
}

}  // namespace kforge
