#include "eval/compiler.h"

#include <chrono>
#include <mutex>

#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> CompilerEnv(const fs::path& dir) {
  const char* path = std::getenv("PATH");
  return {{"PATH", path ? path : "/usr/bin:/bin"}, {"HOME", dir.string()},
          {"TMPDIR", dir.string()}, {"LC_ALL", "C"}};
}

std::vector<std::string> Flags(const BackendInfo& backend, CompileKind kind) {
  std::vector<std::string> f = {"-std=c++20", "-fPIC", "-shared", "-fvisibility=hidden",
                                "-I" + AbiIncludeDir().string()};
  if (kind == CompileKind::kReference) {
    f.insert(f.end(), {"-O2", "-fno-fast-math", "-ffp-contract=off"});
    return f;
  }
  f.insert(f.end(), {"-O3", "-march=native", "-fopenmp"});
  f.insert(f.end(), backend.compile_flags.begin(), backend.compile_flags.end());
  return f;
}

std::string AbiHeadersText() {
  std::string all;
  for (const char* h : {"kforge_cpu.h", "kforge_reference.h", "kforge_opencl.h"}) {
    Result<std::string> t = ReadFile(AbiIncludeDir() / h);
    if (t.ok()) all += *t;
  }
  return all;
}

}  // namespace

fs::path AbiIncludeDir() { return DataDir() / "include" / "kforge" / "abi"; }

std::string CompilerVersion(ProcessRunner& runner) {
  static std::mutex mu;
  static std::string version;
  std::lock_guard<std::mutex> lock(mu);
  if (version.empty()) {
    ProcessSpec spec;
    spec.argv = {"g++", "--version"};
    spec.cwd = "/";
    spec.env = CompilerEnv("/tmp");
    spec.limits.wall_seconds = 20;
    spec.limits.drop_privileges = false;
    ProcessResult r = runner.Run(spec);
    version = r.Succeeded() ? r.out.substr(0, r.out.find('\n')) : "g++ (version unknown)";
  }
  return version;
}

Result<CompileOutput> Compile(ProcessRunner& runner, const BackendInfo& backend,
                              const fs::path& source, CompileKind kind) {
  auto start = std::chrono::steady_clock::now();
  KF_ASSIGN_OR_RETURN(std::string text, ReadFile(source));
  std::vector<std::string> flags = Flags(backend, kind);
  std::vector<std::string> link = kind == CompileKind::kReference ? std::vector<std::string>{} : backend.link_flags;
  std::string key_text = CompilerVersion(runner) + "\n" + AbiHeadersText() + "\n" + text;
  for (const std::string& f : flags) key_text += "\n" + f;
  for (const std::string& f : link) key_text += "\n" + f;
  CompileOutput out;
  out.key = Hash128Hex(key_text);
  KF_ASSIGN_OR_RETURN(fs::path cache, CacheDir());
  fs::create_directories(cache / "build");
  out.library = cache / "build" / (out.key + ".so");
  if (fs::exists(out.library)) {
    out.ok = out.cached = true;
    return out;
  }
  KF_ASSIGN_OR_RETURN(fs::path dir, MakeTempDir("compile"));
  KF_RETURN_IF_ERROR(WriteFileAtomic(dir / "candidate.cc", text));
  ProcessSpec spec;
  spec.argv = {"g++"};
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  spec.argv.insert(spec.argv.end(), {"candidate.cc", "-o", "candidate.so"});
  spec.argv.insert(spec.argv.end(), link.begin(), link.end());
  spec.cwd = dir;
  spec.env = CompilerEnv(dir);
  spec.limits.wall_seconds = 180;
  spec.limits.cpu_seconds = 300;
  spec.limits.address_space_bytes = 4ull << 30;
  spec.limits.output_bytes = 1 << 20;
  ProcessResult r = runner.Run(spec);
  out.command = spec.argv;
  out.log = TailLines(r.err + r.out, 60, 16 << 10);
  if (r.end != ProcessResult::End::kExited) out.log = "compiler " + r.Describe() + "\n" + out.log;
  out.ok = r.Succeeded() && fs::exists(dir / "candidate.so");
  if (out.ok) {
    std::error_code ec;
    fs::path tmp = out.library;
    tmp += ".tmp";
    fs::copy_file(dir / "candidate.so", tmp, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(tmp, out.library, ec);
    if (ec) return Status::IoError("cannot store compiled library in " + out.library.string() + ": " + ec.message());
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kforge
