// The triton backend: Triton kernels in a Python module (kf_run, or a KernelBench ModelNew),
// judged in the Python worker on an NVIDIA GPU, or by Triton's interpreter on the CPU.
#include "backend/registry.h"

namespace kforge {

BackendSpec TritonSpec() {
  BackendSpec b = PythonHostedSpec("triton", "Triton kernels in a Python module (kf_run or a KernelBench ModelNew); "
                                             "NVIDIA GPUs, or Triton's interpreter on the CPU");
  b.python_module = "triton";
  // The function after @triton.jit (or a bare @jit) is a kernel; autotune and heuristics
  // decorators may sit between.
  b.kernel_decorators = {"triton.jit", "@jit"};
  b.first_call_compile_errors = {"triton:CompilationError"};
  b.python_module_install = "scripts/setup installs Triton 3.2.0 beside Debian's PyTorch (on a GPU machine, use its python3)";
  return b;
}

}  // namespace kforge
