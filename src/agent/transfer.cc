#include "agent/transfer.h"

#include <algorithm>
#include <system_error>

#include "agent/generator.h"
#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

// A missing file given to --transfer: what it should have been.
constexpr char kNoSuchFile[] =
    ": no such file (the kernel to port: its host file, e.g. problems/gelu/seeds/naive_cuda.cu)";

bool HasSibling(const BackendSpec& b) {
  return b.sibling_program_source && *b.sibling_extension != '\0';
}

bool TakesExtension(const BackendSpec& b, const std::string& ext) {
  return std::find(b.extensions.begin(), b.extensions.end(), ext) != b.extensions.end();
}

fs::path WithExtension(fs::path file, const std::string& ext) {
  return file.replace_extension(ext);
}

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// "opencl or vulkan" for messages.
std::string NamesOf(const std::vector<const BackendSpec*>& specs) {
  std::string out;
  for (size_t i = 0; i < specs.size(); ++i)
    out += (i == 0 ? "" : i + 1 == specs.size() ? " or " : ", ") + std::string(specs[i]->name);
  return out;
}

// The backends the file could be a kernel for, most specific rule first: a sibling's own
// extension; a host file with its sibling beside it; the one native backend taking the
// extension (a lone .cc is cpp's, not a launcher missing its .cl); the Python-hosted ones.
std::vector<const BackendSpec*> Candidates(const fs::path& file) {
  const std::string ext = file.extension().string();
  std::vector<const BackendSpec*> found;
  for (const BackendSpec& b : Backends())
    if (HasSibling(b) && ext == b.sibling_extension) found.push_back(&b);
  if (!found.empty()) return found;
  for (const BackendSpec& b : Backends())
    if (HasSibling(b) && TakesExtension(b, ext) && IsFile(WithExtension(file, b.sibling_extension)))
      found.push_back(&b);
  if (!found.empty()) return found;
  if (const BackendSpec* b = BackendForExtension(ext)) return {b};
  for (const BackendSpec& b : Backends())
    if (TakesExtension(b, ext)) found.push_back(&b);
  return found;
}

// The file's text, or an error that names it and says what to do.
Result<std::string> ReadKernelFile(const fs::path& file, const std::string& missing) {
  if (!fs::exists(file)) return Status::NotFound(missing);
  if (!IsFile(file))
    return Status::InvalidArgument("--transfer: " + file.string() +
                                   " is not a file; give the kernel's source file");
  Result<std::string> text = ReadFile(file);
  if (!text.ok())
    return Status::IoError("--transfer: cannot read " + file.string() + " (" +
                           text.status().message() + "); make it readable, or give another kernel");
  if (text->find_first_not_of(" \t\r\n") == std::string::npos)
    return Status::InvalidArgument("--transfer: " + file.string() +
                                   " is empty; give a working kernel to port");
  return text;
}

// The host file of a kernel given by its sibling (gelu.cl -> gelu.cpp or gelu.cc, in the
// order of the spec's extensions); "" when none is there.
fs::path HostBeside(const fs::path& sibling, const BackendSpec& source) {
  for (const std::string& ext : source.extensions)
    if (fs::path host = WithExtension(sibling, ext); IsFile(host)) return host;
  return {};
}

std::string FirstOr(const std::vector<std::string>& words, const std::string& fallback) {
  return words.empty() ? fallback : words.front();
}

}  // namespace

Result<const BackendSpec*> ResolveTransferBackend(const fs::path& file, const std::string& named) {
  if (!named.empty()) {
    const BackendSpec* b = FindBackend(named);
    if (!b)
      return Status::InvalidArgument("unknown --transfer-backend '" + named +
                                     "'; the backends are: " + BackendNames());
    return b;
  }
  const std::vector<const BackendSpec*> found = Candidates(file);
  if (found.size() == 1) return found.front();
  if (found.empty())
    return Status::InvalidArgument(
        "--transfer " + file.string() + ": no backend takes files ending in '" +
        file.extension().string() + "'; name the kernel's backend with --transfer-backend (" +
        BackendNames() + ")");
  return Status::InvalidArgument("--transfer " + file.string() + " could be a kernel for " +
                                 NamesOf(found) + "; name its backend with --transfer-backend");
}

Result<TransferKernel> ReadTransferKernel(const fs::path& file, const BackendSpec& source) {
  const std::string name = source.name;
  fs::path host = file, sibling;
  if (HasSibling(source) && file.extension().string() == source.sibling_extension) {
    sibling = file;
    if (!fs::exists(sibling)) return Status::NotFound("--transfer " + file.string() + kNoSuchFile);
    host = HostBeside(sibling, source);
    if (host.empty())
      return Status::NotFound(
          "--transfer " + file.string() + ": a `" + name +
          "` kernel is a host launcher exporting `" + source.entry +
          "` and this file, and no launcher (" +
          WithExtension(file, FirstOr(source.extensions, ".cc")).filename().string() +
          ") is beside it; put it there, or give the launcher to --transfer");
  } else if (HasSibling(source)) {
    sibling = WithExtension(file, source.sibling_extension);
  }
  TransferKernel k;
  k.source = &source;
  Result<std::string> text = ReadKernelFile(host, "--transfer " + host.string() + kNoSuchFile);
  if (!text.ok()) return text.status();
  k.files.push_back({host, FirstOr(source.code_languages, ""), *text});
  if (sibling.empty()) return k;
  text = ReadKernelFile(sibling, "--transfer " + host.string() + ": a `" + name +
                                     "` kernel needs its " + source.sibling_extension +
                                     " kernel source beside the launcher, and " + sibling.string() +
                                     " does not exist; put it there, or name the launcher's " +
                                     "backend with --transfer-backend");
  if (!text.ok()) return text.status();
  k.files.push_back(
      {sibling,
       FirstOr(source.sibling_code_languages, std::string(source.sibling_extension).substr(1)),
       *text});
  return k;
}

Result<TransferKernel> LoadTransferKernel(const fs::path& file, const std::string& named) {
  KF_ASSIGN_OR_RETURN(const BackendSpec* source, ResolveTransferBackend(file, named));
  return ReadTransferKernel(file, *source);
}

std::string TransferPromptText(const TransferKernel& kernel, const BackendSpec& target) {
  std::string out;
  for (const TransferFile& f : kernel.files) {
    out += "`" + f.path.filename().string() + "`:\n\n" + FencedBlock(f.language, f.text) + "\n";
  }
  const std::string source = kernel.source->name, want = target.name;
  out += "This `" + source + "` kernel exports `" + kernel.source->entry + "`, the `" + source +
         "` ABI's entry point; your `" + want + "` kernel must export `" + target.entry +
         "` instead, as the `" + want +
         "` ABI above defines it (signature, tensors, sizes, launch), and keep only the kernel's "
         "ideas.\n";
  return out;
}

}  // namespace kforge
