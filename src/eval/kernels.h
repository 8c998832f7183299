// Kernel accounting (docs/evaluation.md, "Kernels accounted for"): which device kernels a GPU
// candidate ran during one checking call, and whether any of them are its own.
//
// The record comes from the worker (CUPTI in kforge-worker's CUDA child, torch.profiler in the
// Python child; docs/worker-protocol.md, "kernels"); everything here is the trusted reading of
// it in the orchestrator. A kernel is the candidate's own when its name is one the candidate's
// source defines (a CUDA `__global__` function, a function after a Python DSL's kernel decorator
// such as `@triton.jit`: every spec's kernel_decorators); every other kernel (cuBLAS, cuDNN, ATen, torch.compile's Triton kernels) is a library kernel.
//
// A candidate gets `no_custom_kernel` when none of its own kernels ran, or when they ran for
// less time than writing its outputs once takes at the device's theoretical bandwidth: then
// they cannot have produced the outputs, library kernels did.
#ifndef KFORGE_EVAL_KERNELS_H_
#define KFORGE_EVAL_KERNELS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

// The kernels `source` defines: the names of its `__global__` functions (CUDA C++, also inside
// Python strings given to load_inline) and of the functions after a spec's kernel decorator
// (`@triton.jit`; backend/registry.h KernelDecorators), in order, no repeats.
std::vector<std::string> OwnKernelNames(const std::string& source);
// The specs' kernel decorators for messages: "@triton.jit, @jit, ...".
std::string KernelDecoratorList();
// Whether a Python source names torch's extension builder (load_inline, torch.utils.cpp_extension).
bool BuildsTorchExtension(const std::string& source);
// The namespaces `source` declares (`namespace a {`, `namespace a::b {`), innermost names too.
std::vector<std::string> DeclaredNamespaces(const std::string& source);

// True when the kernel `name`, as CUPTI (mangled) or torch.profiler (demangled, Triton's own
// name) reports it, is one of `own`: a mangled `_Z<len><name>`, or a demangled name starting
// with it (after "void ", a spec's kernel_name_prefix and the candidate's own namespaces),
// followed by '(', '<', the end, or a DSL's suffix '_'.
bool IsOwnKernel(const std::string& name, const std::vector<std::string>& own,
                 const std::vector<std::string>& namespaces);

struct KernelAccounting {
  bool available = false;          // a record was made
  bool no_custom_kernel = false;   // the label (see above)
  // The record is not what the worker writes (a wrong type somewhere): the candidate's process,
  // where it is made, tampered with it. Nothing else is read from it.
  bool malformed = false;
  std::string message;             // why the label; empty without it
  std::vector<std::string> warnings;
  nlohmann::json summary = nlohmann::json::object();  // the verdict's `kernels` (verdict-schema.md)
};

// Reads the worker's record `raw` (null or {"available": false, ...} when none was made).
// Never throws: a record of the wrong shape is `malformed`.
// `output_bytes`: the outputs of the recorded call; `bandwidth_gbs`: the device's theoretical
// memory bandwidth (0: unknown, then only "none of its own kernels ran" labels).
KernelAccounting AccountKernels(const nlohmann::json& raw, const std::string& source,
                                double output_bytes, double bandwidth_gbs);

}  // namespace kforge

#endif  // KFORGE_EVAL_KERNELS_H_
