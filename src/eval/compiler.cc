#include "eval/compiler.h"

#include <unistd.h>

#include <chrono>
#include <future>
#include <map>
#include <thread>
#include <mutex>
#include <regex>

#include "base/files.h"
#include "eval/compile_log.h"
#include "eval/worker_client.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

bool IsTransient(const ProcessResult& r) {
  if (r.end == ProcessResult::End::kStartFailed) return true;
  std::string text = r.err + r.out + r.start_error;
  return text.find("Resource temporarily unavailable") != std::string::npos ||
         text.find("Cannot allocate memory") != std::string::npos;
}


// The ABI headers are copied into every compile folder: the compiler runs as the sandbox user,
// who may not be able to read the source tree (a root user's /root or a mktemp -d clone).
constexpr const char* kAbiCopy = "kforge_abi";

std::map<std::string, std::string> CompilerEnv(const fs::path& dir) {
  const char* path = std::getenv("PATH");
  return {{"PATH", path ? path : "/usr/bin:/bin"}, {"HOME", dir.string()},
          {"TMPDIR", dir.string()}, {"LC_ALL", "C"}};
}

// A backend whose candidates a device compiler builds (nvcc, hipcc) rather than g++.
bool HasToolchain(const BackendSpec& backend) { return backend.toolchain.find != nullptr; }

std::string RunForVersion(ProcessRunner& runner, const std::vector<std::string>& argv) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.cwd = "/";
  spec.env = CompilerEnv("/tmp");
  spec.limits.wall_seconds = 20;
  spec.limits.drop_privileges = false;
  ProcessResult r = runner.Run(spec);
  return r.Succeeded() ? r.out : "";
}

// A device compiler's flags for `arch` (the toolchain's), then the backend's compile_flags.
std::vector<std::string> ToolchainFlags(const BackendSpec& backend, const std::string& arch) {
  std::vector<std::string> f = backend.toolchain.flags(arch, kAbiCopy);
  f.insert(f.end(), backend.compile_flags.begin(), backend.compile_flags.end());
  return f;
}

std::vector<std::string> Flags(const BackendSpec& backend, CompileKind kind) {
  std::vector<std::string> f = {"-std=c++20", "-fPIC", "-shared", "-fvisibility=hidden",
                                "-I" + std::string(kAbiCopy)};
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
  for (const std::string& h : AbiHeaders()) {
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

std::string ToolchainVersion(ProcessRunner& runner, const BackendSpec& backend) {
  if (!HasToolchain(backend)) return CompilerVersion(runner);
  static std::mutex mu;
  static std::map<std::string, std::string> versions;  // by toolchain name
  std::lock_guard<std::mutex> lock(mu);
  const Toolchain& tc = backend.toolchain;
  std::string& version = versions[tc.name];
  if (version.empty()) {
    std::string path = tc.find();
    std::string kept = path.empty() || !tc.version ? "" : tc.version(RunForVersion(runner, {path, "--version"}));
    version = (kept.empty() ? std::string(tc.name) + " (not found)" : kept) + " | host " + CompilerVersion(runner);
  }
  return version;
}

Result<std::string> DeviceArch(ProcessRunner& runner, const BackendSpec& backend, int device) {
  static std::mutex mu;
  static std::map<std::string, Result<std::string>> cache;
  std::string key = std::string(backend.name) + "-" + std::to_string(device);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Result<nlohmann::json> probe = ProbeWorkerOnce(runner, backend.name);
  const nlohmann::json j = probe.ok() ? *probe : nlohmann::json(nullptr);
  Result<std::string> arch = probe.ok() ? Result<std::string>(std::string()) : probe.status();
  if (probe.ok() && j.contains("error")) {
    arch = Status::Unavailable(j["error"].get<std::string>());
  } else if (probe.ok()) {
    const nlohmann::json devices = j.value("devices", nlohmann::json::array());
    std::smatch m;
    static const std::regex kArch(R"(\b(sm_\d+a?|gfx[0-9a-f]+)\b)");
    std::string d = device >= 0 && device < static_cast<int>(devices.size()) ? devices[device].get<std::string>() : "";
    arch = std::regex_search(d, m, kArch) ? Result<std::string>(std::string(m[1]))
                                          : Status::NotFound(std::string(backend.name) + " device " + std::to_string(device) + " does not exist");
  }
  cache.emplace(key, arch);
  return arch;
}

std::string BuildArch(ProcessRunner& runner, const BackendSpec& backend, int device, std::string* guessed) {
  if (!backend.per_device_arch) return "";
  Result<std::string> arch = DeviceArch(runner, backend, device);
  if (arch.ok()) return *arch;
  const char* env = std::getenv(backend.arch_env);
  std::string chosen = env && *env ? env : backend.default_arch;
  if (guessed) *guessed = "compiled for " + chosen + " without a device to ask: " + arch.status().message();
  return chosen;
}

namespace {

// The sibling a backend compiles ahead of time (vulkan's <stem>.comp), or an empty path.
fs::path CompiledSibling(const BackendSpec& backend, const fs::path& source, CompileKind kind) {
  if (!backend.sibling_compile || kind != CompileKind::kCandidate) return {};
  fs::path sib = source;
  sib.replace_extension(backend.sibling_extension);
  return fs::exists(sib) ? sib : fs::path();
}

// Compiles the sibling into dir (vulkan: kf_shader.h) in the sandbox and writes the glue file
// that goes with the host file. False with out->log set when the sibling does not compile.
Result<bool> CompileSibling(ProcessRunner& runner, const BackendSpec& backend, const fs::path& sibling,
                            const fs::path& dir, CompileOutput* out) {
  KF_ASSIGN_OR_RETURN(std::string text, ReadFile(sibling));
  const std::string name = std::string("candidate") + backend.sibling_extension;
  KF_RETURN_IF_ERROR(WriteFileAtomic(dir / name, text));
  ProcessSpec spec;
  spec.argv = backend.sibling_compile(name);
  spec.cwd = dir;
  spec.env = CompilerEnv(dir);
  spec.limits.wall_seconds = 60;
  spec.limits.cpu_seconds = 60;
  spec.limits.address_space_bytes = 4ull << 30;
  spec.limits.output_bytes = 1 << 20;
  ProcessResult r = runner.Run(spec);
  if (IsTransient(r)) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    r = runner.Run(spec);
  }
  out->command = spec.argv;
  if (r.Succeeded() && fs::exists(dir / "kf_shader.h")) {
    KF_RETURN_IF_ERROR(WriteFileAtomic(dir / "kf_sibling_glue.cc", backend.sibling_glue()));
    return true;
  }
  out->log = "compiler " + r.Describe() + (r.start_error.empty() ? "" : ": " + r.start_error) + "\n" +
             RenameSourceInLog(TrimCompilerLog(r.out + r.err), name, sibling.filename().string());
  out->ok = false;
  out->rejected = r.end == ProcessResult::End::kExited && r.exit_code != 0;
  return false;
}

// Builds `text` into out->library (not there yet). Success is kept on disk, in the cache.
Status Build(ProcessRunner& runner, const BackendSpec& backend, const fs::path& source, const std::string& text,
             CompileKind kind, bool device_compiler, const std::vector<std::string>& flags, const std::vector<std::string>& link,
             const fs::path& report, CompileOutput* out_ptr) {
  CompileOutput& out = *out_ptr;
  std::string tool = device_compiler ? backend.toolchain.find() : "g++";
  if (tool.empty()) {
    out.log = backend.toolchain.missing;
    return Status::Ok();
  }
  const std::string source_name = kind == CompileKind::kCandidate ? backend.source_name : "candidate.cc";
  KF_ASSIGN_OR_RETURN(fs::path dir, MakeTempDir("compile"));
  KF_RETURN_IF_ERROR(WriteFileAtomic(dir / source_name, text));
  fs::create_directories(dir / kAbiCopy);
  for (const std::string& h : AbiHeaders()) {
    std::error_code ec;
    fs::copy_file(AbiIncludeDir() / h, dir / kAbiCopy / h, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::NotFound("cannot copy the ABI header " + (AbiIncludeDir() / h).string() + ": " + ec.message() +
                                    "; set KFORGE_HOME to kforge's source or install folder");
  }
  std::vector<std::string> sources = {source_name};
  if (fs::path sibling = CompiledSibling(backend, source, kind); !sibling.empty()) {
    KF_ASSIGN_OR_RETURN(bool compiled, CompileSibling(runner, backend, sibling, dir, &out));
    if (!compiled) {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
      return Status::Ok();
    }
    sources.push_back("kf_sibling_glue.cc");
  }
  ProcessSpec spec;
  spec.argv = {tool};
  spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
  spec.argv.insert(spec.argv.end(), sources.begin(), sources.end());
  spec.argv.insert(spec.argv.end(), {"-o", "candidate.so"});
  spec.argv.insert(spec.argv.end(), link.begin(), link.end());
  spec.cwd = dir;
  spec.env = CompilerEnv(dir);
  // nvcc's host front end and device compile side by side (kforge-nvcc), driving this nvcc.
  if (device_compiler && std::string_view(backend.toolchain.name) == "nvcc") {
    if (fs::path lanes = NvccWrapperPath(); !lanes.empty()) {
      spec.env["KFORGE_REAL_NVCC"] = tool;
      spec.argv[0] = lanes.string();
    }
  }
  spec.limits.wall_seconds = 180;
  spec.limits.cpu_seconds = 300;
  spec.limits.address_space_bytes = device_compiler ? 16ull << 30 : 4ull << 30;
  spec.limits.output_bytes = 1 << 20;
  ProcessResult r = runner.Run(spec);
  // A compiler that could not start or fork (the sandbox user's process limit is shared by
  // every sandbox on the machine) is a transient failure of the machine, not of the candidate:
  // try once more.
  if (IsTransient(r)) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    r = runner.Run(spec);
  }
  out.command = spec.argv;
  std::string full = r.err + r.out;
  if (backend.compile_report && kind == CompileKind::kCandidate) out.resources = backend.compile_report(full);
  // The compiler saw `source_name`; the log names the candidate's own file (kind kReference:
  // the problem's reference), with the first errors kept (eval/compile_log.h).
  out.log = RenameSourceInLog(TrimCompilerLog(full), source_name, source.filename().string());
  if (!r.Succeeded()) out.log = "compiler " + r.Describe() + (r.start_error.empty() ? "" : ": " + r.start_error) + "\n" + out.log;
  out.ok = r.Succeeded() && fs::exists(dir / "candidate.so");
  out.rejected = r.end == ProcessResult::End::kExited && r.exit_code != 0;
  if (out.ok) {
    std::error_code ec;
    fs::path tmp = out.library;
    tmp += ".tmp" + std::to_string(getpid()) + "-" + dir.filename().string();  // two builds of one key may race
    fs::copy_file(dir / "candidate.so", tmp, fs::copy_options::overwrite_existing, ec);
    if (!ec && !out.resources.empty()) (void)WriteFileAtomic(report, out.resources.dump());
    if (!ec) fs::rename(tmp, out.library, ec);
    if (ec) return Status::IoError("cannot store compiled library in " + out.library.string() + ": " + ec.message());
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return Status::Ok();
}

// Builds in flight or failed in this process, by key (see Compile).
struct Flight {
  std::mutex mu;
  std::map<std::string, std::shared_future<Result<CompileOutput>>> builds;
};

Flight& Flights() {
  static Flight* f = new Flight;  // never destroyed: compile threads may outlive main's statics
  return *f;
}

}  // namespace

Result<CompileOutput> Compile(ProcessRunner& runner, const BackendSpec& backend,
                              const fs::path& source, CompileKind kind, const std::string& arch) {
  auto start = std::chrono::steady_clock::now();
  KF_ASSIGN_OR_RETURN(std::string text, ReadFile(source));
  bool device_compiler = HasToolchain(backend) && kind == CompileKind::kCandidate;
  const std::string target = arch.empty() ? backend.default_arch : arch;
  std::vector<std::string> flags = device_compiler ? ToolchainFlags(backend, target) : Flags(backend, kind);
  std::vector<std::string> link = kind == CompileKind::kReference ? std::vector<std::string>{} : backend.link_flags;
  std::string key_text = (device_compiler ? ToolchainVersion(runner, backend) : CompilerVersion(runner)) + "\n" + AbiHeadersText() + "\n" + text;
  for (const std::string& f : flags) key_text += "\n" + f;
  for (const std::string& f : link) key_text += "\n" + f;
  if (fs::path sibling = CompiledSibling(backend, source, kind); !sibling.empty()) {
    KF_ASSIGN_OR_RETURN(std::string sibling_text, ReadFile(sibling));
    for (const std::string& a : backend.sibling_compile("candidate")) key_text += "\n" + a;
    key_text += "\n" + std::string(backend.sibling_glue()) + "\n" + sibling_text;
  }
  CompileOutput out;
  out.key = Hash128Hex(key_text);
  if (device_compiler) out.arch = target;
  KF_ASSIGN_OR_RETURN(fs::path cache, CacheDir());
  fs::create_directories(cache / "build");
  out.library = cache / "build" / (out.key + ".so");
  fs::path report = cache / "build" / (out.key + ".resources.json");
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  if (fs::exists(out.library)) {
    out.ok = out.cached = true;
    Result<std::string> saved = ReadFile(report);
    if (saved.ok()) out.resources = nlohmann::json::parse(*saved, nullptr, false);
    if (out.resources.is_discarded()) out.resources = nlohmann::json::object();
    out.seconds = seconds();
    return out;
  }
  // One build per key at a time in this process: a second caller (the judge of a candidate that
  // the compile farm, eval/compile_farm.h, is already building) waits for the first build and
  // takes its result. A compiler's verdict on a source (an error) is remembered for the
  // process's life, not on disk: a toolchain fixed later is asked again by the next process.
  std::promise<Result<CompileOutput>> promise;
  std::shared_future<Result<CompileOutput>> theirs;
  {
    Flight& f = Flights();
    std::lock_guard<std::mutex> lock(f.mu);
    auto it = f.builds.find(out.key);
    if (it != f.builds.end()) theirs = it->second;
    else f.builds.emplace(out.key, promise.get_future().share());
  }
  if (theirs.valid()) {
    Result<CompileOutput> r = theirs.get();
    if (r.ok()) {
      r->cached = r->ok;
      r->seconds = seconds();
    }
    return r;
  }
  Status built = Build(runner, backend, source, text, kind, device_compiler, flags, link, report, &out);
  out.seconds = seconds();
  Result<CompileOutput> result = built.ok() ? Result<CompileOutput>(out) : Result<CompileOutput>(built);
  promise.set_value(result);
  // Kept: a compiler's error on this source. Dropped: a success (the library is on disk now) and
  // a failure to build at all (the next caller tries again).
  if (!built.ok() || out.ok || !out.rejected) {
    Flight& f = Flights();
    std::lock_guard<std::mutex> lock(f.mu);
    f.builds.erase(out.key);
  }
  return result;
}

}  // namespace kforge
