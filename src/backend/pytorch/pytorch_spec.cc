// The pytorch backend: KernelBench ModelNew modules (PyTorch with inline CUDA through
// load_inline, or Triton kernels), judged in the Python worker.
#include "backend/registry.h"

namespace kforge {

BackendSpec PyTorchSpec() {
  BackendSpec b;
  b.name = "pytorch";
  b.summary = "KernelBench ModelNew modules: PyTorch with inline CUDA (load_inline) or "
              "Triton kernels; on a GPU when there is one, else the CPU";
  b.entry = "kf_run";
  b.deny = PythonRules();
  b.compiler = "python";
  b.source_name = "candidate.py";
  b.unlimited_address_space = true;
  b.python_hosted = true;
  b.wants_gpu = true;
  // Python launches cost tens of microseconds each; only a gap far beyond that is suspicious.
  b.host_gap_suspicious_ms = 1.0;
  b.extensions = {".py"};
  b.code_languages = {"python", "py", "python3"};
  b.highlight = "python";
  return b;
}

}  // namespace kforge
