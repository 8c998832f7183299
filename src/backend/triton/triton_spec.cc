// The triton backend: Triton kernels in a Python module (kf_run, or a KernelBench ModelNew),
// judged in the Python worker on an NVIDIA GPU, or by Triton's interpreter on the CPU.
#include "backend/registry.h"

namespace kforge {

BackendSpec TritonSpec() {
  BackendSpec b;
  b.name = "triton";
  b.summary = "Triton kernels in a Python module (kf_run or a KernelBench ModelNew); "
              "NVIDIA GPUs, or Triton's interpreter on the CPU";
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
  b.python_module = "triton";
  return b;
}

}  // namespace kforge
