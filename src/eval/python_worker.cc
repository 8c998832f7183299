#include "eval/python_worker.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "base/files.h"
#include "base/parallel.h"
#include "base/stats.h"
#include "eval/kernels.h"
#include "eval/python_zygote.h"
#include "eval/worker_client.h"
#include "kforge/verdict.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

std::string PythonInterpreter() {
  if (const char* env = std::getenv("KFORGE_PYTHON"); env && *env) return env;
  std::error_code ec;
  for (const char* p : {"/opt/kforge/venv/bin/python3", "/usr/bin/python3"}) {
    if (fs::exists(p, ec)) return p;
  }
  return "python3";
}

fs::path PythonWorkerScript() { return DataDir() / "python" / "kforge_pyworker.py"; }

std::map<std::string, fs::path> PythonWorkerFiles() {
  const fs::path dir = DataDir() / "python";
  return {{"kforge_pyworker.py", PythonWorkerScript()},
          {"kforge_pychild.py", dir / "kforge_pychild.py"},
          {"kforge_kernels.py", dir / "kforge_kernels.py"},
          {"kforge_inputs.py", dir / "kforge_inputs.py"}};
}

namespace {

constexpr uint32_t kBaselineUid = 65533;

// <cache>/python/candidate-extensions, made if missing: the candidates' torch extension builds,
// an entry per candidate source (CandidateExtensions below). With root it is root's, 0755, and
// so is the folder above it: no sandbox user can add, rename or replace an entry.
Result<fs::path> CandidateExtensionStore() {
  KF_ASSIGN_OR_RETURN(fs::path cache, CacheDir());
  const fs::path store = cache / "python" / "candidate-extensions";
  std::error_code ec;
  fs::create_directories(store, ec);
  if (ec) return Status::IoError("cannot make " + store.string() + ": " + ec.message());
  if (geteuid() == 0) {
    for (const fs::path& p : {cache / "python", store}) {
      (void)!chown(p.c_str(), 0, 0);
      chmod(p.c_str(), 0755);
    }
  } else {
    chmod(store.c_str(), 0700);
  }
  return store;
}

// Compile caches kept between jobs, so that a second judgement is warm; none is a place one
// candidate can plant something for another. A candidate's Triton cache is its own
// (CandidateCompileCache below): the job's folder holds it, filled from and saved back to a store
// keyed by the candidate's SHA-256, which no sandbox can write. Its torch extension builds
// (load_inline) are its own too (CandidateExtensions below): TORCH_EXTENSIONS_DIR is the entry of
// its source's SHA-256 in <cache>/python/candidate-extensions, lent to the job's user for the
// job alone; until then it is <job>/torch_extensions. Baselines share Inductor's and Triton's
// caches in folders of their own user (65533, mode 0700), which candidates cannot write: a
// candidate must not be able to plant a slow artefact for the baseline. Without root there is no
// second user, so baseline jobs get fresh caches (always cold). The shared cache folders are the
// only ones besides the job folder the sandbox lets the worker write.
void SetPythonEnv(const fs::path& dir, const std::string& mode, ProcessSpec* spec) {
  std::map<std::string, std::string>& env = spec->env;
  env = {
      {"HOME", dir.string()}, {"TMPDIR", dir.string()}, {"LC_ALL", "C.UTF-8"},
      {"PYTHONDONTWRITEBYTECODE", "1"}, {"PYTHONNOUSERSITE", "1"}, {"PYTHONUNBUFFERED", "1"},
      // getpass.getuser() (Inductor's cache paths) reads these before the password database,
      // which has no entry for the baseline user.
      {"USER", mode == "baseline" ? "kforge-baseline" : "nobody"},
      {"LOGNAME", mode == "baseline" ? "kforge-baseline" : "nobody"},
      {"TRITON_CACHE_DIR", (dir / "triton").string()},
      {"TORCH_EXTENSIONS_DIR", (dir / "torch_extensions").string()},
      {"TORCHINDUCTOR_CACHE_DIR", (dir / "inductor").string()},
      {"MAX_JOBS", std::to_string(std::max(1u, std::thread::hardware_concurrency()))}};
  for (const char* name : {"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "OMP_NUM_THREADS",
                           "TORCH_CUDA_ARCH_LIST", "CC", "CXX"}) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  const bool root = geteuid() == 0;
  if (mode == "candidate") {
    // load_inline's CUDA builds go through kforge-nvcc (backend/cuda/nvcc_lanes.h): cudafe++
    // and the device compile side by side. A PYTORCH_NVCC of the user's (PyTorch pastes it into
    // its build file: "ccache nvcc" works there) is left as it is.
    if (const char* own = std::getenv("PYTORCH_NVCC"); own && *own) {
      env["PYTORCH_NVCC"] = own;
    } else if (const fs::path nvcc = NvccWrapperPath(); !nvcc.empty()) {
      env["PYTORCH_NVCC"] = nvcc.string();
      spec->readable_paths.push_back(nvcc.parent_path());
    }
    // With root the store is writable in the sandbox (a warm worker's jobs all see it), guarded
    // by ownership: the store is root's (0755), each entry root's (0700) but while lent. Without
    // root a job's sandbox shows its own entry writable, nothing else of the store.
    if (!root) return;
    Result<fs::path> store = CandidateExtensionStore();
    if (store.ok()) spec->writable_paths.push_back(*store);
    return;
  }
  if (mode != "baseline" || !root) return;
  Result<fs::path> cache = CacheDir();
  if (!cache.ok()) return;
  const fs::path base = *cache / "python" / "baselines";
  std::error_code ec;
  fs::create_directories(base, ec);
  if (ec) return;
  // Owned by root: the sandbox users must not be able to rename or replace each other's folder.
  (void)!chown((*cache / "python").c_str(), 0, 0);
  chmod((*cache / "python").c_str(), 0755);
  (void)!chown(base.c_str(), kBaselineUid, 65534);
  chmod(base.c_str(), 0700);
  for (const auto& [var, sub] : std::map<std::string, std::string>{{"TRITON_CACHE_DIR", "triton"}, {"TORCHINDUCTOR_CACHE_DIR", "inductor"}}) {
    fs::path p = base / sub;
    fs::create_directories(p, ec);
    if (ec) continue;
    (void)!chown(p.c_str(), kBaselineUid, 65534);
    env[var] = p.string();
    spec->writable_paths.push_back(p);
  }
}

}  // namespace

namespace {

// A file's or folder's state as a kept probe answer records it: "absent", or its inode, size
// and modification time (an install into a folder changes the folder's).
std::string PathState(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "absent";
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

// Where the answer of a probe for `module` is kept: named by what the probe's run depends on
// besides files (the interpreter, the environment a probe job gets, the worker's own files, the
// NVIDIA driver and its cards, the device nodes).
Result<fs::path> KeptProbePath(const std::string& module) {
  KF_ASSIGN_OR_RETURN(fs::path cache, CacheDir());
  ProcessSpec spec;
  SetPythonEnv("/kforge-probe", "probe", &spec);
  // The user matters: as root the probe runs as a sandbox user, otherwise as the caller, whose
  // groups may open device nodes the sandbox user cannot.
  std::vector<gid_t> groups(256);
  const int n = getgroups(static_cast<int>(groups.size()), groups.data());
  groups.resize(n > 0 ? static_cast<size_t>(n) : 0);
  json key = {{"interpreter", PythonInterpreter()}, {"module", module}, {"env", spec.env}, {"files", json::object()},
              {"uid", geteuid()}, {"gid", getegid()}, {"groups", groups}};
  for (const auto& [name, from] : PythonWorkerFiles()) key["files"][name] = PathState(from.string());
  if (Result<std::string> v = ReadFile("/proc/driver/nvidia/version"); v.ok()) key["nvidia"] = *v;
  std::error_code ec;
  for (const auto& gpu : fs::directory_iterator("/proc/driver/nvidia/gpus", ec))
    if (Result<std::string> info = ReadFile(gpu.path() / "information"); info.ok()) key["gpus"][gpu.path().filename().string()] = *info;
  std::vector<std::string> nodes;
  for (const auto& node : fs::directory_iterator("/dev", ec)) {
    const std::string name = node.path().filename().string();
    if (name.rfind("nvidia", 0) == 0 || name == "kfd" || name == "dxg") nodes.push_back(name);
  }
  for (const auto& node : fs::directory_iterator("/dev/dri", ec)) nodes.push_back("dri/" + node.path().filename().string());
  std::sort(nodes.begin(), nodes.end());
  key["dev"] = nodes;
  if (Result<std::string> v = ReadFile("/sys/module/amdgpu/version"); v.ok()) key["amdgpu"] = *v;
  return cache / "python" / "probes" / (Sha256Hex(key.dump(-1, ' ', false, json::error_handler_t::replace)) + ".json");
}

}  // namespace

Result<json> ProbePythonOnce(ProcessRunner& runner, const std::string& module, bool* kept) {
  if (kept) *kept = false;
  const char* off = std::getenv("KFORGE_KEEP_PYTHON_PROBE");
  const bool keep = !(off && std::string(off) == "0");
  Result<fs::path> path = keep ? KeptProbePath(module) : Result<fs::path>(Status::Unavailable("off"));
  if (path.ok()) {
    Result<std::string> text = ReadFile(*path);
    json k = text.ok() ? json::parse(*text, nullptr, false) : json();
    bool valid = k.is_object() && k.contains("probe") && k["probe"].is_object() && k.contains("rests_on") &&
                 k["rests_on"].is_object() && !k["rests_on"].empty();
    if (valid)
      for (const auto& [file, state] : k["rests_on"].items()) valid = valid && state.is_string() && PathState(file) == state.get<std::string>();
    if (valid) {
      if (kept) *kept = true;
      return k["probe"];
    }
  }
  KF_ASSIGN_OR_RETURN(fs::path dir, MakeTempDir("pyprobe"));
  std::error_code ec;
  for (const auto& [name, from] : PythonWorkerFiles()) {
    fs::copy_file(from, dir / name, ec);
    if (ec) return Status::NotFound("the Python worker " + from.string() + " is missing: " + ec.message());
  }
  ProcessSpec spec;
  spec.argv = {PythonInterpreter(), (dir / "kforge_pyworker.py").string(), "probe"};
  if (!module.empty()) spec.argv.push_back(module);
  spec.cwd = dir;
  SetPythonEnv(dir, "probe", &spec);
  spec.limits.wall_seconds = 120;
  spec.limits.address_space_bytes = 0;
  spec.limits.max_processes = 256;
  ProcessResult r = runner.Run(spec);
  fs::remove_all(dir, ec);
  json j = json::parse(r.out, nullptr, false);
  if (!r.Succeeded() || j.is_discarded() || !j.is_object())
    return Status::Unavailable("the Python worker (" + PythonInterpreter() + ") " + r.Describe() +
                               "; install Python 3 with PyTorch (scripts/setup) or set KFORGE_PYTHON\n" +
                               TailLines(r.err, 10, 2000));
  // Kept for the next process while every file and folder the answer rests on is as it was
  // now (a package installed, upgraded or removed anywhere on the import path changes one).
  // Never an answer that may be a passing state: PyTorch that did not import, or no CUDA device
  // on a machine with an NVIDIA or AMD driver (CUDA's start fails while the fabric manager
  // starts, after a suspend, ...); those are probed again by the next process.
  const json rests_on = j.contains("_rests_on") ? j["_rests_on"] : json();
  j.erase("_rests_on");
  bool gpu_seen = false;
  for (const json& d : j.value("devices", json::array())) gpu_seen |= d.is_string() && d.get<std::string>().rfind("cuda", 0) == 0;
  const bool driver = fs::exists("/proc/driver/nvidia/version", ec) || fs::exists("/dev/kfd", ec);
  if (path.ok() && rests_on.is_array() && !rests_on.empty() && !j.contains("error") && (gpu_seen || !driver)) {
    json k = {{"probe", j}, {"rests_on", json::object()}};
    for (const json& f : rests_on)
      if (f.is_string()) k["rests_on"][f.get<std::string>()] = PathState(f.get<std::string>());
    // Written by kforge only: root's and readable (the cache's other stores), or the caller's.
    fs::create_directories(path->parent_path(), ec);
    chmod(path->parent_path().c_str(), geteuid() == 0 ? 0755 : 0700);
    (void)WriteFileAtomic(*path, k.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return j;
}

Result<json> ProbePython(ProcessRunner& runner, const std::string& module, bool* kept) {
  static std::mutex mu;
  static std::map<std::string, std::pair<json, bool>> probes;  // the answer, and whether it was kept
  std::lock_guard<std::mutex> lock(mu);
  auto& [cached, was_kept] = probes[module];
  if (cached.is_null()) {
    // Every probe reports PyTorch and Triton: one made for another module answers this one too
    // when it reported it (the triton backend's and pytorch's judgements share one probe).
    for (const auto& [other, probe] : probes)
      if (!probe.first.is_null() && (module.empty() || probe.first.contains(module) || probe.first.contains(module + "_error"))) {
        cached = probe.first;
        was_kept = probe.second;
        break;
      }
  }
  if (cached.is_null()) {
    KF_ASSIGN_OR_RETURN(cached, ProbePythonOnce(runner, module, &was_kept));
  }
  if (kept) *kept = was_kept;
  return cached;
}

std::string PythonBackendUnusable(const BackendSpec& b, const json& probe) {
  if (probe.contains("error")) return probe.value("error", std::string());
  const std::string module = b.python_module;
  if (!module.empty() && !probe.contains(module)) {
    const std::string fix = *b.python_module_install ? b.python_module_install : "scripts/setup installs it";
    return "the " + std::string(b.name) + " backend needs the Python module '" + module + "', which does not import in " +
           probe.value("executable", PythonInterpreter()) + " (" + probe.value(module + "_error", std::string("not installed")) +
           "): " + fix + "; or set KFORGE_PYTHON to an interpreter that has it";
  }
  if (b.gpu_required && TorchDevice(probe, true, 0) == "cpu")
    return "the " + std::string(b.name) + " backend runs only on an NVIDIA GPU, and PyTorch in " +
           probe.value("executable", PythonInterpreter()) + " sees no CUDA device (" +
           (probe.value("cuda", json()).is_string() ? "CUDA " + probe["cuda"].get<std::string>() + " build" : "a CPU-only build") +
           "); judge its candidates on a machine with one";
  return "";
}

std::string TorchDevice(const json& probe, bool want_gpu, int device) {
  if (const char* env = std::getenv("KFORGE_TORCH_DEVICE"); env && *env) return env;
  bool gpu = false;
  for (const json& d : probe.value("devices", json::array())) gpu |= d.get<std::string>().rfind("cuda", 0) == 0;
  return want_gpu && gpu ? "cuda:" + std::to_string(device) : "cpu";
}

ProcessSpec PythonJobSpec(const json& job, const Limits& limits, const fs::path& dir) {
  ProcessSpec spec;
  spec.argv = {PythonInterpreter(), (dir / "kforge_pyworker.py").string(), "run", dir.string()};
  spec.cwd = dir;
  const std::string mode = job.value("mode", "");
  SetPythonEnv(dir, mode, &spec);
  // The device lock (docs/python-worker.md) must be reachable even with the cache below /tmp.
  if (const std::string lock = job.value("lock_file", ""); !lock.empty())
    spec.readable_paths.push_back(fs::path(lock).parent_path());
  spec.limits = limits;
  if (mode == "baseline") spec.limits.sandbox_uid = kBaselineUid;
  return spec;
}

namespace {

// --- A candidate's own Triton cache. -------------------------------------------------------------
// <cache>/python/candidate-triton/<SHA-256 of the candidate's source>/, written only by this
// process: copied into the job's folder (TRITON_CACHE_DIR=<job>/triton) before the job and what
// the job added copied back after it, so that only a later job of the same source sees it.
constexpr uint64_t kCandidateCacheBytes = 256ull << 20;  // a store entry's limit

std::mutex candidate_cache_mu;
std::map<std::string, fs::path> candidate_cache_of;  // job folder -> its store entry

// Copies the regular files below `from` to `to` (never through a link: a job's folder is the
// candidate's to shape), those missing there or different, up to `limit` bytes in all.
void CopyCacheTree(const fs::path& from, const fs::path& to, uint64_t limit) {
  std::error_code ec;
  uint64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(from, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 4) {
      it.disable_recursion_pending();
      continue;
    }
    const fs::file_status st = it->symlink_status(ec);
    if (ec || !fs::is_regular_file(st)) continue;
    const fs::path rel = it->path().lexically_relative(from);
    const fs::path dest = to / rel;
    const uint64_t size = it->file_size(ec);
    if (ec || (total += size) > limit) return;
    std::error_code e2;
    int fd = open(it->path().c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    std::string bytes(size, '\0');
    ssize_t n = read(fd, bytes.data(), size);
    close(fd);
    if (n != static_cast<ssize_t>(size)) continue;
    if (fs::file_size(dest, e2) == size && !e2) {
      Result<std::string> there = ReadFile(dest);
      if (there.ok() && *there == bytes) continue;
    }
    fs::create_directories(dest.parent_path(), e2);
    (void)WriteFileAtomic(dest, bytes);
  }
}

// A candidate job's source (its candidate.py) and that source's SHA-256, which keys its compile
// caches; none for other jobs, or when the source cannot be read.
struct CandidateSource {
  std::string bytes, digest;
};
std::optional<CandidateSource> CandidateSourceOf(const json& job, const PythonJobFiles& files) {
  auto source = files.copies.find("candidate.py");
  if (job.value("mode", "") != "candidate" || source == files.copies.end()) return std::nullopt;
  Result<std::string> bytes = ReadFile(source->second);
  if (!bytes.ok()) return std::nullopt;
  return CandidateSource{*bytes, Sha256Hex(*bytes)};
}

// Fills `dir`/triton from the candidate's store entry and remembers the entry for
// SaveCandidateCompileCache. Only candidate jobs of a source file (candidate.py) have one.
void SeedCandidateCompileCache(const std::optional<CandidateSource>& source, const Limits& limits, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir / "triton", ec);
  // The job's, as its folder is (subprocess.cc hands the folder itself to the sandbox's user).
  struct HandOver {
    fs::path triton;
    const Limits& limits;
    ~HandOver() {
      if (geteuid() != 0 || !limits.drop_privileges) return;
      std::error_code e;
      (void)!chown(triton.c_str(), limits.sandbox_uid, 65534);
      for (auto it = fs::recursive_directory_iterator(triton, e); !e && it != fs::recursive_directory_iterator(); it.increment(e))
        (void)!lchown(it->path().c_str(), limits.sandbox_uid, 65534);
    }
  } hand_over{dir / "triton", limits};
  if (!source) return;
  Result<fs::path> cache = CacheDir();
  if (!cache.ok()) return;
  const fs::path store = *cache / "python" / "candidate-triton";
  fs::create_directories(store, ec);
  if (ec) return;
  chmod(store.c_str(), 0700);  // the trusted process's alone
  const fs::path entry = store / source->digest;
  if (fs::exists(entry, ec)) CopyCacheTree(entry, dir / "triton", kCandidateCacheBytes);
  std::lock_guard<std::mutex> lock(candidate_cache_mu);
  candidate_cache_of[dir.string()] = entry;
}

// After the job: what it added to its Triton cache, into its store entry.
void SaveCandidateCompileCache(const fs::path& dir) {
  fs::path entry;
  {
    std::lock_guard<std::mutex> lock(candidate_cache_mu);
    auto it = candidate_cache_of.find(dir.string());
    if (it == candidate_cache_of.end()) return;
    entry = it->second;
    candidate_cache_of.erase(it);
  }
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(dir / "triton", ec))) CopyCacheTree(dir / "triton", entry, kCandidateCacheBytes);
}


// --- A candidate's own torch extension builds. -----------------------------------------------
// TORCH_EXTENSIONS_DIR of a candidate's job is <store>/<SHA-256 of its source>, the entry itself
// and not a copy: torch's build files name their folder (build.ninja's paths), so ninja finds a
// build up to date only where it was made. The entry is lent to the job for the job alone:
//   - an flock on <store>/<digest>.lock, held by this process, makes it one job's at a time; a
//     job of the same source that finds it taken builds in <job>/torch_extensions instead;
//   - with root, the entry and what is in it become the job's user's before the job (0700, so
//     no other sandbox user can enter it) and root's again after every process of the job ended
//     (HandExtensionFolder); a job whose processes may have outlived it (no PID namespace of its
//     own, a warm worker that did not end) has its entry removed instead. Only a user of the
//     job's own is lent an entry: never `nobody`, whom other jobs share;
//   - without root, the job's sandbox shows that entry writable and nothing else of the store
//     (such a job runs cold: a warm worker's sandbox has no such folder).
// Only sources that name torch's extension builder get one. So what a job leaves in its entry
// only later jobs of the same source see, as with Triton's cache.
constexpr uint64_t kExtensionEntryBytes = 1ull << 30;  // an entry's limits after its job, else it goes
constexpr uint64_t kExtensionEntryFiles = 10000;       // (a build makes about ten files, depth 1)
constexpr int kExtensionEntryDepth = 8;
constexpr size_t kExtensionEntriesKept = 256;  // the store's, the least recently lent go first

struct ExtensionLoan {
  fs::path entry;
  int lock_fd = -1;
};
std::map<std::string, ExtensionLoan> extension_loans;  // job folder -> its entry (candidate_cache_mu)

struct HandOverCount {
  uint64_t bytes = 0, files = 0;
};

// Gives the folder open as `dirfd` and what is in it to `uid` (group nogroup), or to root when
// `uid` is 0, through descriptors, never by path: each folder is made root's and 0700 before it
// is read, so that no process of the job's user can swap a name in it for a link meanwhile.
// Links, second names of files (hard links: a file of another entry), special files and torch's
// build lock (<name>/lock, which a killed build leaves and which would make every later job of
// the source wait forever) are removed; set-id and group or others' write bits dropped. False
// when the folder is past the limits or cannot be walked: then it is not handed over whole.
bool HandExtensionFolder(int dirfd, uid_t uid, int depth, HandOverCount* count) {
  const bool root = geteuid() == 0;
  const gid_t gid = uid == 0 ? 0 : 65534;
  if (root && fchown(dirfd, 0, 0) != 0) return false;
  if (fchmod(dirfd, 0700) != 0) return false;
  const int listing = dup(dirfd);
  DIR* d = listing < 0 ? nullptr : fdopendir(listing);
  if (!d) {
    if (listing >= 0) close(listing);
    return false;
  }
  bool ok = true;
  std::vector<std::string> folders;
  while (ok) {
    errno = 0;
    const dirent* e = readdir(d);
    if (!e) {
      ok = errno == 0;
      break;
    }
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const bool build_lock = depth == 1 && name == "lock";
    struct stat st = {};
    if (++count->files > kExtensionEntryFiles || fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      ok = false;
    } else if (S_ISDIR(st.st_mode) && !build_lock) {
      folders.push_back(name);
    } else if (S_ISREG(st.st_mode) && st.st_nlink == 1 && !build_lock) {
      count->bytes += static_cast<uint64_t>(st.st_size);
      // The folder is root's now: the name still is this file.
      ok = (!root || fchownat(dirfd, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) == 0) &&
           fchmodat(dirfd, name.c_str(), st.st_mode & 0755, 0) == 0;
    } else {
      ok = unlinkat(dirfd, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0;
    }
  }
  closedir(d);
  for (const std::string& name : folders) {
    if (!ok || depth + 1 > kExtensionEntryDepth) return false;
    const int sub = openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    ok = sub >= 0 && HandExtensionFolder(sub, uid, depth + 1, count);
    if (sub >= 0) close(sub);
  }
  if (!ok || count->bytes > kExtensionEntryBytes) return false;
  return (!root || fchown(dirfd, uid, gid) == 0) && fchmod(dirfd, depth == 0 ? 0700 : 0755) == 0;
}

bool HandExtensionEntry(const fs::path& entry, uid_t uid) {
  const int fd = open(entry.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  HandOverCount count;
  const bool ok = HandExtensionFolder(fd, uid, 0, &count);
  close(fd);
  return ok;
}

// Out of every sandbox user's reach at once (<store>/.removed is root's, 0700), then deleted as
// far as that goes.
void RemoveExtensionEntry(const fs::path& entry) {
  const fs::path bin = entry.parent_path() / ".removed";
  std::error_code ec;
  fs::create_directory(bin, ec);
  chmod(bin.c_str(), 0700);
  static std::atomic<uint64_t> serial{0};
  const fs::path gone = bin / (entry.filename().string() + "." + std::to_string(getpid()) + "." + std::to_string(++serial));
  fs::rename(entry, gone, ec);
  if (!ec) fs::remove_all(gone, ec);  // what cannot be deleted stays there, unreachable
}

// Keeps the store to kExtensionEntriesKept entries: the least recently lent ones not lent now go.
void PruneExtensionStore(const fs::path& store) {
  std::vector<std::pair<fs::file_time_type, std::string>> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(store, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() == 64 && e.is_directory(ec)) entries.push_back({fs::last_write_time(store / (name + ".lock"), ec), name});
  }
  if (entries.size() <= kExtensionEntriesKept) return;
  std::sort(entries.begin(), entries.end());
  for (size_t i = 0; i + kExtensionEntriesKept < entries.size(); ++i) {
    const fs::path lock = store / (entries[i].second + ".lock");
    const int fd = open(lock.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      RemoveExtensionEntry(store / entries[i].second);
      unlink(lock.c_str());
    }
    close(fd);
  }
}

// Lends the candidate's entry to the job in `dir` (its TORCH_EXTENSIONS_DIR in `spec`).
void LendCandidateExtensions(const std::optional<CandidateSource>& source, const Limits& limits, const fs::path& dir,
                             ProcessSpec* spec) {
  if (!source || !BuildsTorchExtension(source->bytes)) return;
  const bool root = geteuid() == 0;
  // With root, a user of the job's own: nobody (65534) may be other jobs' too.
  if (root && (!limits.drop_privileges || limits.sandbox_uid == 0 || limits.sandbox_uid == 65534)) return;
  Result<fs::path> store = CandidateExtensionStore();
  if (!store.ok()) return;
  const std::string& digest = source->digest;
  const fs::path entry = *store / digest;
  const int fd = open((*store / (digest + ".lock")).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return;
  }
  futimens(fd, nullptr);  // lent now: the last to go when the store is pruned
  std::error_code ec;
  const bool made = fs::create_directory(entry, ec);
  const uid_t to = root ? limits.sandbox_uid : geteuid();
  if (ec || !HandExtensionEntry(entry, to)) {
    RemoveExtensionEntry(entry);
    if (!fs::create_directory(entry, ec) || !HandExtensionEntry(entry, to)) {
      close(fd);
      return;
    }
  }
  if (made) PruneExtensionStore(*store);
  spec->env["TORCH_EXTENSIONS_DIR"] = entry.string();
  if (!root) spec->writable_paths.push_back(entry);
  std::lock_guard<std::mutex> lock(candidate_cache_mu);
  extension_loans[dir.string()] = {entry, fd};
}

// After the job, or instead of it: the entry root's again (removed if the job's processes may
// still live, or it is past its limits), and free for the next job of its source.
void ReturnCandidateExtensions(const fs::path& dir, bool processes_ended) {
  ExtensionLoan loan;
  {
    std::lock_guard<std::mutex> lock(candidate_cache_mu);
    auto it = extension_loans.find(dir.string());
    if (it == extension_loans.end()) return;
    loan = it->second;
    extension_loans.erase(it);
  }
  if (!processes_ended || !HandExtensionEntry(loan.entry, geteuid())) RemoveExtensionEntry(loan.entry);
  close(loan.lock_fd);
}

}  // namespace

Result<ProcessSpec> PreparePythonJob(const json& job, const PythonJobFiles& files, const Limits& limits, fs::path* job_dir,
                                     const fs::path& parent) {
  fs::path dir;
  if (parent.empty()) {
    KF_ASSIGN_OR_RETURN(dir, MakeJobDir("pyjob", kPythonJobBytes));
  } else {
    KF_ASSIGN_OR_RETURN(dir, MakeDirIn(parent, "job"));
  }
  *job_dir = dir;
  std::map<std::string, fs::path> copies = files.copies;
  // A warm worker has imported its own copies of the worker's files once, at its start.
  if (parent.empty())
    for (const auto& [name, from] : PythonWorkerFiles()) copies[name] = from;
  for (const auto& [name, from] : copies) {
    std::error_code ec;
    fs::copy_file(from, dir / name, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::IoError("cannot copy " + from.string() + " into the job folder: " + ec.message());
  }
  for (const auto& [name, bytes] : files.blobs)
    KF_RETURN_IF_ERROR(WriteFile(dir / name, bytes.data(), bytes.size()));
  KF_RETURN_IF_ERROR(WriteFileAtomic(dir / "job.json", job.dump(1)));
  const std::optional<CandidateSource> source = CandidateSourceOf(job, files);
  SeedCandidateCompileCache(source, limits, dir);
  ProcessSpec spec = PythonJobSpec(job, limits, dir);
  LendCandidateExtensions(source, limits, dir, &spec);
  return spec;
}

void AbandonPythonJob(const fs::path& dir) {
  {
    std::lock_guard<std::mutex> lock(candidate_cache_mu);
    candidate_cache_of.erase(dir.string());
  }
  ReturnCandidateExtensions(dir, true);
}

WorkerRun FinishPythonJob(ProcessResult process, const fs::path& dir) {
  SaveCandidateCompileCache(dir);
  ReturnCandidateExtensions(dir, process.pid_namespace);
  WorkerRun run = ReadWorkerRun(std::move(process), dir);
  VerifyPythonResult(&run);
  return run;
}

namespace {

// A cold job (no warm worker) of user nobody's, a candidate or a reference, runs under an id of
// its own as a warm worker's jobs do (python_zygote.cc), leased before its folder is prepared
// for that id; baselines keep their user. The lease is held until the job ends.
struct ColdJob {
  UidLease lease;
  std::string gap;  // why it has no id of its own, when one was wanted
  ProcessSpec spec;
  fs::path dir;
};

Result<std::shared_ptr<ColdJob>> PrepareColdPythonJob(ProcessRunner& runner, const json& job, const PythonJobFiles& files,
                                                      const Limits& limits) {
  auto cold = std::make_shared<ColdJob>();
  Limits own = limits;
  if (runner.IsSandbox() && limits.sandbox_uid == 65534 && job.value("mode", "") != "baseline") {
    ProcessSpec leasing;
    leasing.limits = limits;
    cold->lease = LeaseOwnUid(&leasing, &cold->gap);
    own = leasing.limits;
  }
  KF_ASSIGN_OR_RETURN(cold->spec, PreparePythonJob(job, files, own, &cold->dir));
  if (cold->lease.held()) cold->spec.leased_uid = cold->lease.uid();
  return cold;
}

WorkerRun RunColdPythonJob(ProcessRunner& runner, const ColdJob& cold) {
  ProcessResult process = runner.Run(cold.spec);
  if (!cold.gap.empty()) process.isolation_gaps.push_back(cold.gap);
  return FinishPythonJob(std::move(process), cold.dir);
}

}  // namespace

Result<WorkerRun> RunPythonWorker(ProcessRunner& runner, const json& job, const PythonJobFiles& files,
                                  const Limits& limits) {
  if (std::optional<WorkerRun> warm = RunInWarmPythonWorker(runner, job, files, limits)) return *std::move(warm);
  KF_ASSIGN_OR_RETURN(std::shared_ptr<ColdJob> cold, PrepareColdPythonJob(runner, job, files, limits));
  return RunColdPythonJob(runner, *cold);
}

Result<std::unique_ptr<StandbyPythonJob>> StandbyPythonJob::Start(ProcessRunner& runner, json job, const PythonJobFiles& files,
                                                                  const Limits& limits) {
  job["await_sets"] = true;
  job["sets"] = json::array();
  std::unique_ptr<StandbyPythonJob> standby(new StandbyPythonJob());
  if (std::optional<WarmPythonJob> warm = StartInWarmPythonWorker(runner, job, files, limits)) {
    standby->dir_ = warm->dir;
    standby->done_ = std::move(warm->done);
    return standby;
  }
  KF_ASSIGN_OR_RETURN(std::shared_ptr<ColdJob> cold, PrepareColdPythonJob(runner, job, files, limits));
  standby->dir_ = cold->dir;
  standby->done_ = std::async(std::launch::async, [&runner, cold] { return RunColdPythonJob(runner, *cold); });
  return standby;
}

WorkerRun StandbyPythonJob::Run(const json& sets) {
  if (given_) return WorkerRun{};
  given_ = true;
  // The worker waits for the file to exist: written whole, then renamed into place.
  Status written = WriteFileAtomic(dir_ / "sets.json", json{{"sets", sets}}.dump());
  if (!written.ok()) {
    (void)WriteFileAtomic(dir_ / "sets.json", json{{"cancel", true}}.dump());
    WorkerRun run = done_.get();
    Cleanup(run);
    run.SetResult({{"error", {{"stage", "standby"}, {"message", "cannot give the standby job its sets: " + written.message()}}}});
    return run;
  }
  return done_.get();
}

StandbyPythonJob::~StandbyPythonJob() {
  if (given_ || !done_.valid()) return;
  (void)WriteFileAtomic(dir_ / "sets.json", json{{"cancel", true}}.dump());
  WorkerRun run = done_.get();
  Cleanup(run);
}

// --- What the supervisor wrote, verified. ------------------------------------------------------

namespace {

// The hash on the supervisor's last stdout line, "kforge-result <hex>"; empty when absent.
std::string PrintedResultHash(const std::string& out) {
  const std::string tag = "kforge-result ";
  size_t end = out.find_last_not_of("\n");
  if (end == std::string::npos) return "";
  size_t start = out.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  std::string line = out.substr(start, end + 1 - start);
  if (line.rfind(tag, 0) != 0) return "";
  std::string hex = line.substr(tag.size());
  bool ok = hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(static_cast<unsigned char>(c)); });
  return ok ? hex : "";
}

// At most this many bytes of a job's output files are held in memory (WorkerRun::held); a job
// with more has them copied to a fresh folder. $KFORGE_HELD_OUTPUTS_MB, default 4096.
uint64_t HeldOutputsLimit() {
  const char* env = std::getenv("KFORGE_HELD_OUTPUTS_MB");
  const long long mb = env && *env ? std::atoll(env) : 4096;
  return static_cast<uint64_t>(std::max(0LL, mb)) << 20;
}

// Empty when result.json and every listed file match their hashes, else what did not. The files
// are read once, on all cores, and each checked as read. What was checked must be what the
// judge later reads, and the job's folder is not the orchestrator's to trust (a process of the
// same user outside this job's sandbox may hold a file of it open): the bytes are held in
// `run->held` when they fit HeldOutputsLimit(), else copied into `to`, which only this process
// writes. result.json is copied either way, and parsed into `*result`.
std::string VerifiedCopy(WorkerRun* run, const std::string& hash, const fs::path& to, json* result) {
  Result<std::string> text = ReadUntrustedFile(run->dir / "result.json", kResultJsonMaxBytes);
  if (!text.ok()) return text.status().code() == StatusCode::kNotFound ? "result.json is missing" : text.status().message();
  if (Sha256Hex(*text) != hash) return "result.json does not match the SHA-256 the worker printed (it was rewritten after the worker wrote it)";
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "result.json is not a JSON object";
  const json listed = j.value("files", json::object());
  std::vector<std::pair<std::string, std::string>> files;  // (name, digest)
  std::vector<uint64_t> sizes;                              // files[i]'s
  uint64_t bytes = 0;
  for (const auto& [name, want] : listed.items()) {
    if (name.find('/') != std::string::npos || name == ".." || name.empty() || !want.is_string()) return "result.json lists a bad file name: " + name;
    // Its size, the link itself not followed: a link or a FIFO in its place is refused here.
    Result<uint64_t> size = UntrustedFileSize(run->dir / name);
    if (!size.ok()) return "output file " + name + " was changed or removed after the worker wrote it (" + size.status().message() + ")";
    bytes += *size;
    files.emplace_back(name, want.get<std::string>());
    sizes.push_back(*size);
  }
  const bool hold = bytes <= HeldOutputsLimit();
  std::vector<std::string> contents(files.size()), failed(files.size());
  ParallelFor(files.size(), [&](size_t i) {
    const auto& [name, want] = files[i];
    Result<std::string> read = ReadUntrustedFile(run->dir / name, sizes[i]);
    if (!read.ok() || PieceDigestHex(*read) != want) {
      failed[i] = "output file " + name + " was changed or removed after the worker wrote it";
      return;
    }
    if (!hold && !WriteFile(to / name, read->data(), read->size()).ok()) failed[i] = "cannot copy " + name;
    if (hold) contents[i] = std::move(*read);
  });
  for (const std::string& f : failed)
    if (!f.empty()) return f;
  if (hold) {
    auto held = std::make_shared<std::map<std::string, std::string>>();
    for (size_t i = 0; i < files.size(); ++i) (*held)[files[i].first] = std::move(contents[i]);
    run->held = std::move(held);
  }
  if (!WriteFile(to / "result.json", text->data(), text->size()).ok()) return "cannot copy result.json";
  *result = std::move(j);
  return "";
}

}  // namespace

void VerifyPythonResult(WorkerRun* run) {
  const std::string hash = PrintedResultHash(run->process.out);
  const bool exited = run->process.Succeeded();
  std::string problem = hash.empty() ? "the worker printed no result hash (kforge-result line)" : "";
  Result<fs::path> fresh = MakeTempDir("pyresult");
  if (problem.empty() && !fresh.ok()) problem = fresh.status().message();
  json result = json::object();
  if (problem.empty()) problem = VerifiedCopy(run, hash, *fresh, &result);
  run->confirmed = problem.empty();
  if (problem.empty()) {
    run->SetResult(std::move(result));
  } else {
    run->SetResult(exited ? json{{"error", {{"stage", "integrity"}, {"message", problem}}}} : json::object());
  }
  if (!fresh.ok()) return;
  if (!std::getenv("KFORGE_KEEP_TEMP")) {
    std::error_code ec;
    fs::remove_all(run->dir, ec);
  }
  run->dir = *fresh;
}

// --- Timing. -----------------------------------------------------------------------------------


Result<PythonTiming> ParsePythonTiming(const WorkerTiming& timing) {
  PythonTiming t;
  t.device_ms = timing.device_ms;
  t.host_ms = timing.host_ms;
  t.wall_ms = timing.wall_ms;
  t.prepare_ms = timing.prepare_ms;
  t.collect_ms = timing.collect_ms;
  const size_t n = t.device_ms.size();
  if (n == 0 || t.host_ms.size() != n || t.wall_ms.size() != n || t.prepare_ms.size() != n || t.collect_ms.size() != n ||
      !timing.overhead_ms)
    return Status::Internal("the Python worker's timing lacks device_ms, host_ms, wall_ms, prepare_ms, collect_ms or overhead_ms");
  t.overhead_ms = *timing.overhead_ms;
  t.calibration = timing.calibration.value_or(Calibration{});
  t.sets = TimingSets(timing, n);
  return t;
}

void AddPythonStages(const std::string& prefix, const WorkerRun& run, json* stages) {
  (*stages)[prefix + ".wall"] = run.process.wall_seconds;
  for (const auto& [k, v] : run.report.stage_seconds) (*stages)[prefix + "." + k] = v;
  // The child's own stopwatch inside those stages (diagnostic only: the candidate's process).
  for (const auto& [k, v] : run.report.child_seconds) (*stages)[prefix + ".child." + k] = v;
}

}  // namespace kforge
