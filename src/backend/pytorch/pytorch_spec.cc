// The pytorch backend: KernelBench ModelNew modules (PyTorch with inline CUDA through
// load_inline, or Triton kernels), judged in the Python worker.
#include "backend/registry.h"

namespace kforge {

BackendSpec PyTorchSpec() {
  return PythonHostedSpec("pytorch", "KernelBench ModelNew modules: PyTorch with inline CUDA (load_inline) or "
                                     "Triton kernels; on a GPU when there is one, else the CPU");
}

}  // namespace kforge
