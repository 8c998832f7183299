// Cross-backend transfer (`kforge optimize --transfer FILE [--transfer-backend NAME]`): a
// working kernel written for another backend, shown whole to the generation agent as the thing
// to port (docs/transfer.md).
//
// A kernel is its host file and, for a backend whose spec names a sibling kernel source
// (BackendSpec::sibling_extension: OpenCL's .cl, Vulkan's .comp), the sibling of the same stem.
// Either file may be given; the other is found beside it. Nothing here branches on a backend's
// name: the backend's spec (backend/registry.h) says its extensions, sibling and code-block
// languages.
// Thread-safety: free functions without shared state.
#ifndef KFORGE_AGENT_TRANSFER_H_
#define KFORGE_AGENT_TRANSFER_H_

#include <filesystem>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "kforge/status.h"

namespace kforge {

// One file of a transfer kernel, as the prompt shows it.
struct TransferFile {
  std::filesystem::path path;
  std::string language;  // the fenced block's label: the spec's first code language
  std::string text;
};

// A kernel for `source`, its host file first, then its sibling kernel source when the backend
// has one.
struct TransferKernel {
  const BackendSpec* source = nullptr;
  std::vector<TransferFile> files;
};

// The backend of a transfer file. `named` (--transfer-backend) wins when given: it must be a
// backend of the registry, else InvalidArgument listing them. Without it the backend is inferred
// from the file: a sibling's extension names its backend (.cl: opencl, .comp: vulkan); a host
// file with a sibling beside it is that sibling's backend (gelu_opencl.cpp next to
// gelu_opencl.cl: opencl); else the backend whose candidates take the extension (.cu: cuda,
// .hip: hip, .cc: cpp). A file that matches none, or several (a .py module: every Python-hosted
// backend; a .cpp with both a .cl and a .comp beside it), is InvalidArgument asking for
// --transfer-backend.
Result<const BackendSpec*> ResolveTransferBackend(const std::filesystem::path& file,
                                                  const std::string& named);

// Reads the whole kernel for `source` from `file` (its host file or its sibling). Fails with
// NotFound when a file is missing (the sibling included: a kernel without it cannot be ported)
// and IoError when one cannot be read; each message names the file and says what to do.
Result<TransferKernel> ReadTransferKernel(const std::filesystem::path& file,
                                          const BackendSpec& source);

// ResolveTransferBackend, then ReadTransferKernel.
Result<TransferKernel> LoadTransferKernel(const std::filesystem::path& file,
                                          const std::string& named);

// The kernel as the generation prompt shows it: per file its name, then its text in a fenced
// block labelled with its language; then one sentence naming the source's entry point and the
// entry point the `target` candidate must export under the target's ABI.
std::string TransferPromptText(const TransferKernel& kernel, const BackendSpec& target);

}  // namespace kforge

#endif  // KFORGE_AGENT_TRANSFER_H_
