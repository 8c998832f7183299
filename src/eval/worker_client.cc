#include "eval/worker_client.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "backend/registry.h"
#include "base/files.h"
#include "base/sandbox_uids.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

// An id of its own for a worker job (Limits::own_uid), leased here so that the job's cache
// folder can be that id's (SetWorkerEnv). Without one (no sandbox, not root, none free) the job
// runs as nobody; *gap says why when an id was wanted.
UidLease LeaseWorkerUid(const ProcessRunner& runner, ProcessSpec* spec, std::string* gap) {
  spec->limits.own_uid = false;
  spec->leased_uid = 0;
  if (!runner.IsSandbox()) return {};
  return LeaseOwnUid(spec, gap);
}

// The worker's environment, and the cache folders it may write besides its job folder (the
// sandbox keeps everything else read-only): the common variables, and what the backend's spec
// names (registry.h BackendSpec::worker_env).
//
// As root, a job run under an id of its own (`uid`, leased) gets a cache folder of that id
// (<cache>/<backend cache>/<uid>, mode 0700): the caches' files are private to their
// creator (PoCL makes them 0700 and 0600), ids are leased lowest first, so the same few recur
// and their folders stay warm, and no job can write another id's folder. Without one, the
// shared folder belongs to nobody, as the sandbox user was before.
void SetWorkerEnv(const fs::path& dir, const std::string& backend_name, ProcessSpec* spec, uid_t uid = 0) {
  std::map<std::string, std::string>& env = spec->env;
  env = {{"HOME", dir.string()}, {"TMPDIR", dir.string()}, {"LC_ALL", "C"}};
  const BackendSpec* backend = FindBackend(backend_name);
  std::vector<std::string> names = {"PATH", "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT"};
  if (backend) names.insert(names.end(), backend->worker_env.begin(), backend->worker_env.end());
  for (const std::string& name : names) {
    if (const char* v = std::getenv(name.c_str())) env[name] = v;
  }
  // OpenMP threads that keep spinning after the call returned (libgomp spins 300,000 rounds,
  // milliseconds, by default) hold a core the supervisor then waits for: on the 2-core VM its
  // wall clock read 1.2 ms above an OpenMP gelu's 1.1 ms, so the wall-clock bound, not the
  // call, set the median. 1,000 rounds (tens of microseconds) still bridge the gap between
  // two parallel regions of one call. Unless kforge's own environment says otherwise.
  if (!env.count("OMP_WAIT_POLICY") && !env.count("GOMP_SPINCOUNT")) env["GOMP_SPINCOUNT"] = "1000";
  Result<fs::path> cache = CacheDir();
  if (backend && *backend->worker_cache && backend->worker_cache_env && cache.ok()) {
    fs::path folder = *cache / backend->worker_cache;
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (geteuid() == 0) {
      (void)!chown(folder.c_str(), 0, 0);
      chmod(folder.c_str(), 0755);
      folder /= uid != 0 ? std::to_string(uid) : "nobody";
      fs::create_directory(folder, ec);
      struct stat st = {};
      // A folder that is not a directory of this id (a symlink planted by an earlier owner of the
      // parent's name) is not used.
      if (lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) ec = std::make_error_code(std::errc::not_a_directory);
      if (!ec && (chown(folder.c_str(), uid != 0 ? uid : 65534, 65534) != 0 || (uid != 0 && chmod(folder.c_str(), 0700) != 0)))
        ec = std::error_code(errno, std::generic_category());
    }
    if (ec) return;
    for (auto& [name, value] : backend->worker_cache_env(folder.string())) env[name] = value;
    spec->writable_paths.push_back(folder);
  }
}

std::string LastStage(const std::string& err) {
  const std::string tag = "kforge-worker: ";
  size_t pos = err.rfind(tag);
  if (pos == std::string::npos) return "start";
  size_t end = err.find('\n', pos);
  return err.substr(pos + tag.size(), end == std::string::npos ? std::string::npos : end - pos - tag.size());
}

Status CopyIn(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::IoError("cannot copy " + from.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

void WorkerRun::SetResult(nlohmann::json j) {
  result = std::move(j);
  Result<WorkerReport> parsed = ParseWorkerReport(result);
  malformed = !parsed.ok();
  if (parsed.ok()) {
    report = std::move(*parsed);
    return;
  }
  // Nothing of a report of the wrong shape is used: an unfinished run with this error, which
  // the judge's error paths turn into a runtime_error.
  report = WorkerReport();
  report.error = WorkerError{"result", "the worker's report is malformed: " + parsed.status().message(), nullptr};
}

namespace {

Status CheckedName(const std::string& file) {
  if (file.empty() || file.find('/') != std::string::npos) return Status::InvalidArgument("bad output file name '" + file + "'");
  return Status::Ok();
}

Status CheckDigest(const WorkerRun& run, const std::string& file, const void* data, size_t bytes) {
  if (auto kept = run.kept_digests.find(file); kept != run.kept_digests.end()) {
    if (kept->second != Hash128Hex(data, bytes)) return Status::InvalidArgument("kept file " + file + " was changed after it was kept");
    return Status::Ok();
  }
  auto recorded = run.report.files.find(file);
  if (recorded != run.report.files.end() && recorded->second != PieceDigestHex(data, bytes))
    return Status::InvalidArgument("output file " + file + " was changed after the worker's supervisor wrote it");
  return Status::Ok();
}

// The held bytes of `file` (null when it is not held), which must be `bytes` long.
Result<const std::string*> HeldOutput(const WorkerRun& run, const std::string& file, size_t bytes) {
  KF_RETURN_IF_ERROR(CheckedName(file));
  if (!run.held) return nullptr;
  auto it = run.held->find(file);
  if (it == run.held->end()) return nullptr;
  if (it->second.size() != bytes)
    return Status::InvalidArgument("output file " + file + " holds " + std::to_string(it->second.size()) + " bytes, not " + std::to_string(bytes));
  return &it->second;
}

}  // namespace

Result<std::shared_ptr<const std::string>> WorkerRun::ReadOutput(const std::string& file, size_t bytes) const {
  KF_ASSIGN_OR_RETURN(const std::string* held_bytes, HeldOutput(*this, file, bytes));
  if (held_bytes) return std::shared_ptr<const std::string>(held, held_bytes);
  auto read = std::make_shared<std::string>(bytes, '\0');
  KF_RETURN_IF_ERROR(ReadOutputInto(file, read->data(), bytes));
  return std::shared_ptr<const std::string>(std::move(read));
}

Status WorkerRun::ReadOutputInto(const std::string& file, void* out, size_t bytes) const {
  KF_ASSIGN_OR_RETURN(const std::string* held_bytes, HeldOutput(*this, file, bytes));
  if (held_bytes) {
    std::memcpy(out, held_bytes->data(), bytes);
    return Status::Ok();
  }
  KF_RETURN_IF_ERROR(ReadUntrustedFileInto(dir / file, out, bytes));
  return CheckDigest(*this, file, out, bytes);
}

fs::path WorkerPath() {
  const char* env = std::getenv("KFORGE_WORKER");
  if (env && *env) return env;
  return ExecutableDir() / "kforge-worker";
}

fs::path NvccWrapperPath() {
  if (const char* e = std::getenv("KFORGE_NVCC_LANES"); e && std::string(e) == "0") return {};
  std::error_code ec;
  const fs::path p = WorkerPath().parent_path() / "kforge-nvcc";
  if (!fs::is_regular_file(p, ec) || access(p.c_str(), X_OK) != 0) return {};
  return fs::canonical(p, ec);
}

namespace {

// About what the job's folder will hold: the input files, every check's outputs (twice with
// check_twice), and the sampled timed runs' outputs.
uint64_t JobFolderBytes(const Job& job, const WorkerFiles& files) {
  uint64_t bytes = 1 << 20, largest_outputs = 0;
  for (const fs::path& copied : {files.library, files.program_source}) {
    std::error_code ec;
    const uintmax_t size = copied.empty() ? 0 : fs::file_size(copied, ec);
    if (!ec) bytes += size;
  }
  for (const std::vector<HostTensor>& set : files.inputs)
    for (const HostTensor& t : set) bytes += t.bytes().size();
  for (const InputSet& set : job.sets) {
    uint64_t outputs = 0;
    for (const TensorFile& t : set.outputs) outputs += static_cast<uint64_t>(t.shape.bytes());
    largest_outputs = std::max(largest_outputs, outputs);
    bytes += outputs * (job.check_twice ? 2 : 1);
  }
  if (job.timing) bytes += largest_outputs * static_cast<uint64_t>(std::max(job.timing->timed_checks, 0));
  return bytes;
}

}  // namespace

uint64_t JobFolderLimit(const Job& job, const WorkerFiles& files) { return 2 * JobFolderBytes(job, files) + kJobFolderSlack; }

Result<WorkerRun> RunWorker(ProcessRunner& runner, Job job, const WorkerFiles& files, const Limits& limits,
                            const std::vector<std::string>& wrapper) {
  KF_ASSIGN_OR_RETURN(fs::path dir, MakeJobDir("job", JobFolderBytes(job, files)));
  if (!files.library.empty()) {
    KF_RETURN_IF_ERROR(CopyIn(files.library, dir / "candidate.so"));
    job.library = "candidate.so";
  }
  if (!files.program_source.empty()) {
    KF_RETURN_IF_ERROR(CopyIn(files.program_source, dir / "program.cl"));
    job.program_source_file = "program.cl";
  }
  // An input equal to one already written (a model's parameters, the same in every set) names
  // that file: the worker then reads it once. Unequal inputs almost always differ in their first
  // bytes, so the comparison costs a full pass only where it pays for itself.
  std::map<size_t, std::vector<std::pair<const std::string*, std::string>>> written;  // size -> (bytes, file)
  for (size_t s = 0; s < files.inputs.size() && s < job.sets.size(); ++s) {
    for (size_t k = 0; k < files.inputs[s].size(); ++k) {
      const HostTensor& t = files.inputs[s][k];
      std::string name;
      const std::string& b = t.bytes();
      for (const auto& [bytes, file] : written[b.size()])
        if (name.empty() && (bytes == &b || *bytes == b)) name = file;  // shared bytes: no compare
      if (name.empty()) {
        name = "in_" + std::to_string(s) + "_" + t.shape.name + ".bin";
        KF_RETURN_IF_ERROR(WriteFile(dir / name, b.data(), b.size()));
        written[b.size()].emplace_back(&b, name);
      }
      job.sets[s].inputs[k].file = name;
    }
  }
  KF_RETURN_IF_ERROR(WriteFileAtomic(dir / "job.json", JobToJson(job).dump(1)));
  ProcessSpec spec;
  spec.argv = wrapper;
  spec.argv.insert(spec.argv.end(), {WorkerPath().string(), "run", dir.string()});
  spec.cwd = dir;
  // Under a wrapper (ncu, compute-sanitizer) the wrapper's own folder is kept visible by the
  // sandbox, kforge-worker's is not unless named (it may lie below the private /tmp).
  if (!wrapper.empty()) spec.readable_paths.push_back(WorkerPath().parent_path());
  // A job that locks the device itself opens the lock there (read-only), even below /tmp.
  if (!job.lock_file.empty()) spec.readable_paths.push_back(fs::path(job.lock_file).parent_path());
  spec.limits = limits;
  // Each job under an id of its own: a candidate that forks or starts threads up to its limit
  // leaves the process count of the jobs beside it (other candidates, trusted references) alone.
  std::string gap;
  UidLease lease = LeaseWorkerUid(runner, &spec, &gap);
  SetWorkerEnv(dir, job.backend, &spec, spec.leased_uid);
  WorkerRun run = RunPreparedWorker(runner, spec, dir);
  if (!gap.empty()) run.process.isolation_gaps.push_back(gap);
  return run;
}

WorkerRun RunPreparedWorker(ProcessRunner& runner, const ProcessSpec& spec, const fs::path& dir) {
  return ReadWorkerRun(runner.Run(spec), dir);
}

WorkerRun ReadWorkerRun(ProcessResult process, const fs::path& dir) {
  WorkerRun run;
  run.dir = dir;
  run.process = std::move(process);
  run.last_stage = LastStage(run.process.err);
  Result<std::string> text = ReadUntrustedFile(dir / "result.json", kResultJsonMaxBytes);
  nlohmann::json result = nlohmann::json::object();
  if (text.ok()) {
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_discarded() && j.is_object()) result = std::move(j);
  } else if (text.status().code() == StatusCode::kInvalidArgument) {  // a link, a FIFO, a flood
    result = {{"error", {{"stage", "result"}, {"message", "result.json cannot be read as the supervisor's report: " + text.status().message()}}}};
  }
  const std::string tag = "kforge-result ";
  size_t pos = run.process.out.rfind(tag);
  if (pos != std::string::npos && text.ok()) {
    std::string announced = run.process.out.substr(pos + tag.size(), 64);
    run.confirmed = announced == Sha256Hex(*text);
    if (!run.confirmed) {
      result = {{"error", {{"stage", "result"}, {"message", "result.json was changed after the worker's supervisor wrote it "
                                                            "(its SHA-256 differs from the one the supervisor printed)"}}}};
    }
  }
  run.SetResult(std::move(result));
  return run;
}

Result<nlohmann::json> ProbeWorker(ProcessRunner& runner, const std::string& backend, int device) {
  KF_ASSIGN_OR_RETURN(fs::path dir, MakeTempDir("probe"));
  ProcessSpec spec;
  spec.argv = {WorkerPath().string(), "probe", backend, std::to_string(device)};
  spec.cwd = dir;
  spec.limits.wall_seconds = 60;
  spec.limits.address_space_bytes = 0;
  std::string gap;
  UidLease lease = LeaseWorkerUid(runner, &spec, &gap);
  SetWorkerEnv(dir, backend, &spec, spec.leased_uid);
  ProcessResult r = runner.Run(spec);
  std::error_code ec;
  fs::remove_all(dir, ec);
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  if (!r.Succeeded() || j.is_discarded())
    return Status::Unavailable("probing backend " + backend + " failed: the worker " + r.Describe() + "\n" +
                               TailLines(r.err, 10, 2000));
  return j;
}

Result<nlohmann::json> ProbeWorkerOnce(ProcessRunner& runner, const std::string& backend, int device) {
  if (!runner.IsSandbox()) return ProbeWorker(runner, backend, device);
  static std::mutex mu;
  static std::map<std::string, nlohmann::json> probes;
  const std::string key = backend + "/" + std::to_string(device) + "/" + WorkerPath().string();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = probes.find(key); it != probes.end()) return it->second;
  }
  KF_ASSIGN_OR_RETURN(nlohmann::json probe, ProbeWorker(runner, backend, device));
  if (!probe.contains("error")) {
    std::lock_guard<std::mutex> lock(mu);
    probes.emplace(key, probe);
  }
  return probe;
}

void Cleanup(const WorkerRun& run) {
  if (run.kept || std::getenv("KFORGE_KEEP_TEMP")) return;
  std::error_code ec;
  fs::remove_all(run.dir, ec);
}

fs::path DeviceLockPath(const std::string& name) {
  Result<fs::path> cache = CacheDir();
  if (!cache.ok()) return {};
  std::error_code ec;
  fs::create_directories(*cache / "locks", ec);
  fs::path p = *cache / "locks" / (name + ".lock");
  // The lock and its turnstile (base/device_lock.h), both opened by the sandbox users too.
  for (const fs::path& f : {p, DeviceLockGate(p)}) {
    int fd = open(f.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return {};
    fchmod(fd, 0666);  // the umask may have narrowed it
    close(fd);
  }
  return p;
}

DeviceLock::DeviceLock(const std::string& name) : lock_(DeviceLockPath(name)) { lock_.Exclusive(); }

}  // namespace kforge
