#include "eval/python_zygote.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "base/files.h"
#include "eval/worker_client.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kTag[] = "kforge-zygote ";
constexpr double kCancelGraceSeconds = 5;  // a cancelled job's zygote answers within this
constexpr double kEndGraceSeconds = 10;    // an ended zygote's sandbox is gone within this

bool SendAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// A value that names the job's folder, with the folder replaced by `to`.
std::string Rebase(const std::string& value, const std::string& from, const std::string& to) {
  if (from.empty() || value.compare(0, from.size(), from) != 0) return value;
  if (value.size() > from.size() && value[from.size()] != '/') return value;
  return to + value.substr(from.size());
}

}  // namespace

// Triton is imported ahead only where it will be compiled for a GPU: imported before
// TRITON_INTERPRET is set (a CPU job's interpreter mode), it keeps compiled mode, and a
// pre-imported Triton cannot serve interpreted candidates.
bool PreloadTriton() {
  std::error_code ec;
  return fs::exists("/dev/nvidiactl", ec);
}

Result<std::unique_ptr<PythonZygote>> PythonZygote::Start(const ProcessSpec& like, double ready_seconds) {
  std::unique_ptr<PythonZygote> z(new PythonZygote());
  KF_ASSIGN_OR_RETURN(z->root_, MakeJobDir("pyzygote", kPythonJobBytes));
  KF_ASSIGN_OR_RETURN(z->lib_, MakeTempDir("pyzlib"));
  // The worker's files, read once at the start, from a folder the sandbox cannot write.
  chmod(z->lib_.c_str(), 0755);
  for (const auto& [name, from] : PythonWorkerFiles()) {
    std::error_code ec;
    fs::copy_file(from, z->lib_ / name, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::NotFound("the Python worker " + from.string() + " is missing: " + ec.message());
    chmod((z->lib_ / name).c_str(), 0644);
  }
  int in[2], cancel[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0)
    return Status::IoError(std::string("socketpair: ") + std::strerror(errno));
  z->stdin_r_ = in[0];
  z->stdin_w_ = in[1];
  if (pipe2(cancel, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  z->cancel_r_ = cancel[0];
  z->cancel_w_ = cancel[1];

  ProcessSpec& spec = z->spec_;
  spec.argv = {PythonInterpreter(), (z->lib_ / "kforge_pyworker.py").string(), "zygote", "torch"};
  if (PreloadTriton()) spec.argv.push_back("triton");
  spec.cwd = z->root_;
  for (const auto& [k, v] : like.env) spec.env[k] = Rebase(v, like.cwd.string(), z->root_.string());
  // Its PID namespace must differ from this one for kill(-1) to stay inside the sandbox.
  std::error_code ec;
  spec.env["KFORGE_OUTER_PIDNS"] = fs::read_symlink("/proc/self/ns/pid", ec).string();
  if (ec) return Status::Unavailable("the warm Python worker cannot serve: /proc/self/ns/pid: " + ec.message());
  spec.writable_paths = like.writable_paths;
  spec.readable_paths = like.readable_paths;
  spec.readable_paths.push_back(z->lib_);
  spec.limits = like.limits;
  // The zygote's own bounds; each job gets its own (CPU time, address space, file size) from
  // its supervisor's rlimits, and its wall-clock limit from Run().
  spec.limits.wall_seconds = 30 * 24 * 3600.0;
  spec.limits.cpu_seconds = 0;
  spec.limits.address_space_bytes = 0;
  spec.limits.output_bytes = 64 << 10;
  spec.limits.output_kill_bytes = 0;  // a long life's results; each job's output is capped by the zygote
  spec.stdin_fd = z->stdin_r_;
  spec.cancel_fd = z->cancel_r_;
  // Jobs of user nobody (candidates, references) under an id of this zygote's own; baselines
  // keep their user (65533), whose caches are theirs alone.
  if (spec.limits.sandbox_uid == 65534) {
    std::string gap;  // none held: the zygote's jobs run as nobody, as cold ones then do
    z->lease_ = LeaseOwnUid(&spec, &gap);
  }
  PythonZygote* self = z.get();
  spec.on_stdout = [self](std::string_view chunk) { self->OnStdout(chunk); };
  z->runner_ = NewSandboxRunner();
  z->thread_ = std::thread([self] {
    ProcessResult r = self->runner_->Run(self->spec_);
    std::lock_guard<std::mutex> lock(self->mu_);
    self->final_ = std::move(r);
    self->ended_ = true;
    self->cv_.notify_all();
  });
  std::unique_lock<std::mutex> lock(z->mu_);
  const bool answered = z->cv_.wait_for(lock, std::chrono::duration<double>(ready_seconds),
                                        [&] { return z->ready_ || !z->error_.empty() || z->ended_; });
  if (z->ready_) return z;
  std::string why = !z->error_.empty() ? z->error_
                    : z->ended_        ? "it " + z->final_.Describe() + "\n" + TailLines(z->final_.err, 10, 2000)
                    : answered         ? "it did not start"
                                       : "it was not ready within " + std::to_string(static_cast<int>(ready_seconds)) + " s";
  lock.unlock();
  return Status::Unavailable("the warm Python worker cannot serve: " + why);
}

PythonZygote::~PythonZygote() {
  if (thread_.joinable()) {
    // Ended outright: it keeps nothing worth an orderly exit (PyTorch's takes most of a second).
    Cancel();
    thread_.join();
  }
  for (int* fd : {&stdin_w_, &stdin_r_, &cancel_w_, &cancel_r_}) CloseFd(fd);
  std::error_code ec;
  if (!root_.empty()) fs::remove_all(root_, ec);
  if (!lib_.empty()) fs::remove_all(lib_, ec);
}

void PythonZygote::Cancel() {
  if (cancel_w_ >= 0) (void)!write(cancel_w_, "x", 1);
}

bool PythonZygote::usable() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_ && !ended_ && !unusable_;
}

void PythonZygote::ClearRoot() {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(root_, ec)) fs::remove_all(e.path(), ec);
}

void PythonZygote::OnStdout(std::string_view chunk) {
  std::lock_guard<std::mutex> lock(mu_);
  partial_.append(chunk);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(partial_.data() + start, nl - start);
    if (line.rfind(kTag, 0) != 0) continue;
    line.remove_prefix(sizeof kTag - 1);
    size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string kind(line.substr(0, space));
    json j = json::parse(line.substr(space + 1), nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (kind == "ready") {
      ready_ = true;
    } else if (kind == "error") {
      error_ = j.value("message", "an unnamed error");
    } else if (kind == "done" && j.contains("id") && j["id"].is_string()) {
      done_[j["id"].get<std::string>()] = j;
    }
  }
  partial_.erase(0, start);
  if (partial_.size() > (1u << 20)) partial_.clear();  // no line is that long
  cv_.notify_all();
}

ProcessResult PythonZygote::Run(const ProcessSpec& spec, const fs::path& dir) {
  ProcessResult r;
  r.limits = spec.limits;
  const Clock::time_point start = Clock::now();
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = "j" + std::to_string(next_id_++);
  }
  json limits = {{"cpu_seconds", spec.limits.cpu_seconds},
                 {"address_space_bytes", spec.limits.address_space_bytes},
                 {"file_size_bytes", spec.limits.file_size_bytes}};
  json req = {{"op", "run"}, {"id", id}, {"folder", dir.string()}, {"env", spec.env}, {"limits", limits}};
  if (!SendAll(stdin_w_, req.dump() + "\n")) {
    std::lock_guard<std::mutex> lock(mu_);
    unusable_ = true;
    r.end = ProcessResult::End::kStartFailed;
    r.start_error = "the warm Python worker took no request (it has ended)";
    return r;
  }
  std::unique_lock<std::mutex> lock(mu_);
  auto answered = [&] { return done_.count(id) > 0 || ended_; };
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(std::max(spec.limits.wall_seconds, 0.0)));
  bool timed_out = false, flooded = false;
  // The job's folder and whatever else it wrote below the zygote's root, against the limit on
  // its folder (what the sandbox runner does for a cold job), measured every kFolderPollMs.
  auto wait_for_answer = [&] {
    if (spec.limits.folder_bytes == 0) return cv_.wait_until(lock, deadline, answered);
    for (;;) {
      const auto slice = std::min(deadline, Clock::now() + std::chrono::milliseconds(kFolderPollMs));
      if (cv_.wait_until(lock, slice, answered)) return true;
      if (Clock::now() >= deadline) return false;
      lock.unlock();
      const uint64_t held = FolderFootprint(root_, spec.limits.folder_bytes);
      lock.lock();
      if (held > spec.limits.folder_bytes) {
        r.folder_bytes = held;
        flooded = true;
        return answered();
      }
    }
  };
  if (!wait_for_answer() || flooded) {
    timed_out = !flooded;
    lock.unlock();
    SendAll(stdin_w_, json{{"op", "cancel"}, {"id", id}}.dump() + "\n");
    lock.lock();
    if (!cv_.wait_for(lock, std::chrono::duration<double>(kCancelGraceSeconds), answered)) {
      unusable_ = true;
      lock.unlock();
      Cancel();
      lock.lock();
      cv_.wait_for(lock, std::chrono::duration<double>(kEndGraceSeconds), [&] { return ended_; });
    }
  }
  r.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  // The zygote refuses to serve outside a PID namespace of its own, and ends every process of a
  // job before it answers; one that neither answered nor ended may have left the job's running.
  r.pid_namespace = done_.count(id) > 0 || ended_;
  auto it = done_.find(id);
  if (it == done_.end()) {
    // The zygote ended (or was ended) during the job: that is how the job ended.
    unusable_ = true;
    r.end = flooded ? ProcessResult::End::kFolderFlood : timed_out ? ProcessResult::End::kTimedOut : final_.end;
    r.signal = final_.signal;
    r.exit_code = final_.exit_code;
    r.err = final_.err;
    r.err_total = final_.err_total;
    if (r.end == ProcessResult::End::kExited && r.exit_code == 0) r.exit_code = 1;  // it never reported
    if (timed_out) r.wall_seconds = spec.limits.wall_seconds;
    return r;
  }
  const json done = it->second;
  done_.erase(it);
  if (done.contains("unusable")) unusable_ = true;
  lock.unlock();
  if (flooded) {
    r.end = ProcessResult::End::kFolderFlood;
    r.signal = 9;
  } else if (timed_out || done.value("cancelled", false)) {
    r.end = ProcessResult::End::kTimedOut;
    r.signal = 9;
    r.wall_seconds = spec.limits.wall_seconds;
  } else if (done.contains("signal")) {
    r.end = ProcessResult::End::kSignaled;
    r.signal = done.value("signal", 0);
    r.wall_seconds = done.value("wall_seconds", r.wall_seconds);
  } else {
    r.end = ProcessResult::End::kExited;
    r.exit_code = done.value("exit_code", -1);
    r.wall_seconds = done.value("wall_seconds", r.wall_seconds);
  }
  const uint64_t cap = spec.limits.output_bytes;
  r.out = done.value("out", "");
  r.out_total = r.out.size();
  if (r.out.size() > cap) r.out.resize(cap);
  r.err = done.value("err", "");
  r.err_total = done.value("err_total", uint64_t{0});
  if (r.err.size() > cap) r.err = r.err.substr(r.err.size() - cap);
  r.cpu_seconds = done.value("cpu_seconds", 0.0);
  r.max_rss_kb = done.value("max_rss_kb", int64_t{0});
  return r;
}

// --- The pool. ----------------------------------------------------------------------------------

static std::atomic<int> per_kind_default{2};  // SetWarmPythonWorkersPerKind

void SetWarmPythonWorkersPerKind(int jobs) { per_kind_default = std::clamp(2 * jobs, 2, 32); }

bool WarmPythonWorkersEnabled() {
  const char* env = std::getenv("KFORGE_WARM_PYTHON");
  if (env && std::string(env) == "0") return false;
  return std::getenv("KFORGE_KEEP_TEMP") == nullptr;  // kept job folders would be cleared
}

namespace {

struct Pool {
  struct Entry {
    std::string key;
    std::unique_ptr<PythonZygote> zygote;
    bool busy = false;
  };
  std::mutex mu;
  std::condition_variable cv;  // a zygote started or released
  std::vector<std::unique_ptr<Entry>> entries;
  std::set<std::string> failed;
  int started = 0;
  bool said = false;

  // Zygotes still serving a job on another thread when the process exits are left to the
  // kernel (their sandboxes die with this process).
  ~Pool() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& e : entries)
      if (e->busy) (void)e->zygote.release();
    entries.clear();
  }
};

Pool& ThePool() {
  static Pool pool;
  return pool;
}

int PerKind() {
  const char* env = std::getenv("KFORGE_WARM_PYTHON_PER_KIND");
  int n = env && *env ? std::atoi(env) : per_kind_default.load();
  return std::clamp(n, 1, 32);
}

// Jobs that may share a zygote: the same user, interpreter, readable and writable folders and
// environment (the job's own folder aside).
std::string PoolKey(const ProcessSpec& like) {
  std::string key = std::to_string(like.limits.sandbox_uid) + "|" + std::to_string(like.limits.drop_privileges) + "|" +
                    std::to_string(like.limits.isolate_network) + "|" + std::to_string(like.limits.max_processes) + "|" +
                    PythonInterpreter();
  std::vector<std::string> w, r;
  for (const fs::path& p : like.writable_paths) w.push_back(p.string());
  for (const fs::path& p : like.readable_paths) r.push_back(p.string());
  std::sort(w.begin(), w.end());
  std::sort(r.begin(), r.end());
  for (const std::string& p : w) key += "|w:" + p;
  for (const std::string& p : r) key += "|r:" + p;
  for (const auto& [k, v] : like.env) key += "|" + k + "=" + Rebase(v, like.cwd.string(), "<job>");
  return key;
}

// An entry of `key` that is busy and has no zygote yet: callers of Acquire wait for it.
Pool::Entry* NewEntry(Pool& pool, const std::string& key) {
  auto entry = std::make_unique<Pool::Entry>();
  entry->key = key;
  entry->busy = true;
  Pool::Entry* raw = entry.get();
  pool.entries.push_back(std::move(entry));
  return raw;
}

// Starts the zygote of NewEntry's `raw` (the pool's lock held, released while it starts): the
// entry, still busy, or null when it failed to start (the key then runs its jobs cold).
Pool::Entry* Launch(Pool::Entry* raw, const ProcessSpec& like, std::unique_lock<std::mutex>& lock) {
  Pool& pool = ThePool();
  lock.unlock();
  Result<std::unique_ptr<PythonZygote>> z = PythonZygote::Start(like, 300);
  lock.lock();
  pool.cv.notify_all();
  if (z.ok()) {
    raw->zygote = std::move(*z);
    ++pool.started;
    return raw;
  }
  pool.failed.insert(raw->key);
  if (!pool.said) {
    pool.said = true;
    std::fprintf(stderr, "kforge: %s; Python jobs run cold (a sandbox and an interpreter each)\n",
                 z.status().message().c_str());
  }
  pool.entries.erase(std::remove_if(pool.entries.begin(), pool.entries.end(),
                                    [&](const std::unique_ptr<Pool::Entry>& e) { return e.get() == raw; }),
                     pool.entries.end());
  return nullptr;
}

Pool::Entry* Acquire(const ProcessSpec& like) {
  Pool& pool = ThePool();
  const std::string key = PoolKey(like);
  std::unique_lock<std::mutex> lock(pool.mu);
  for (;;) {
    bool starting = false;
    for (auto& e : pool.entries) {
      if (e->key != key) continue;
      if (!e->busy && e->zygote && e->zygote->usable()) {
        e->busy = true;
        return e.get();
      }
      starting |= !e->zygote;
    }
    if (!starting) break;
    pool.cv.wait(lock);  // one being started (a prewarm) is likely the one to take
  }
  if (pool.failed.count(key)) return nullptr;
  int n = 0;
  for (auto& e : pool.entries) n += e->key == key;
  if (n >= PerKind()) return nullptr;
  return Launch(NewEntry(pool, key), like, lock);
}

void Release(Pool::Entry* entry) {
  Pool& pool = ThePool();
  std::unique_ptr<Pool::Entry> gone;
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    entry->busy = false;
    pool.cv.notify_all();
    if (entry->zygote && entry->zygote->usable()) return;
    for (auto& e : pool.entries) {
      if (e.get() == entry) {
        gone = std::move(e);
        break;
      }
    }
    pool.entries.erase(std::remove(pool.entries.begin(), pool.entries.end(), nullptr), pool.entries.end());
  }
  // Destroyed outside the lock: ending a zygote can take seconds.
}

}  // namespace

int WarmPythonWorkersStarted() {
  std::lock_guard<std::mutex> lock(ThePool().mu);
  return ThePool().started;
}

namespace {

// The sandbox of the zygote that serves `job`: that of a candidate job of the same user (its
// compile caches writable), for a reference job too, so that both share one zygote; the device
// locks' folder readable. Jobs of the baseline user get the baseline's sandbox.
ProcessSpec ZygoteSandbox(const json& job, const Limits& limits) {
  json like_job = job;
  if (job.value("mode", "") != "baseline") like_job["mode"] = "candidate";
  like_job.erase("lock_file");
  // Its folder is named, never made: only the rebased parts of the environment depend on it.
  ProcessSpec like = PythonJobSpec(like_job, limits, "/nonexistent/kforge-zygote-job");
  if (fs::path locks = DeviceLockPath("x").parent_path(); !locks.empty()) like.readable_paths.push_back(locks);
  return like;
}

bool Within(const std::vector<fs::path>& these, const std::vector<fs::path>& those) {
  return std::all_of(these.begin(), these.end(),
                     [&](const fs::path& p) { return std::find(those.begin(), those.end(), p) != those.end(); });
}

}  // namespace

std::optional<WarmPythonJob> StartInWarmPythonWorker(ProcessRunner& runner, const json& job, const PythonJobFiles& files,
                                                     const Limits& limits) {
  if (!WarmPythonWorkersEnabled() || !runner.IsSandbox()) return std::nullopt;
  if (job.value("interpret", false) && PreloadTriton()) return std::nullopt;
  if (!limits.isolate_processes || !limits.private_filesystem) return std::nullopt;
  const ProcessSpec like = ZygoteSandbox(job, limits);
  Pool::Entry* entry = Acquire(like);
  if (!entry) return std::nullopt;
  PythonZygote& z = *entry->zygote;
  z.ClearRoot();
  fs::path dir;
  std::error_code ec;
  // The job's folders belong to the user the zygote runs its jobs as.
  Limits as_zygote = limits;
  as_zygote.sandbox_uid = z.uid();
  Result<ProcessSpec> spec = PreparePythonJob(job, files, as_zygote, &dir, z.root());
  // A job that needs a folder the zygote's sandbox does not show runs cold.
  if (!spec.ok() || !Within(spec->writable_paths, like.writable_paths) ||
      !Within(spec->readable_paths, like.readable_paths) ||
      (geteuid() == 0 && spec->limits.drop_privileges && chown(dir.c_str(), z.uid(), 65534) != 0)) {
    if (!dir.empty()) {
      AbandonPythonJob(dir);
      fs::remove_all(dir, ec);
    }
    Release(entry);
    return std::nullopt;
  }
  WarmPythonJob started;
  started.dir = dir;
  started.done = std::async(std::launch::async, [entry, spec = *std::move(spec), dir] {
    ProcessResult process = entry->zygote->Run(spec, dir);
    WorkerRun run = FinishPythonJob(std::move(process), dir);
    Release(entry);
    return run;
  });
  return started;
}

std::optional<WorkerRun> RunInWarmPythonWorker(ProcessRunner& runner, const json& job, const PythonJobFiles& files,
                                               const Limits& limits) {
  if (job.value("await_sets", false)) return std::nullopt;  // StartInWarmPythonWorker
  std::optional<WarmPythonJob> started = StartInWarmPythonWorker(runner, job, files, limits);
  if (!started) return std::nullopt;
  return started->done.get();
}

void PrewarmPythonWorker(ProcessRunner& runner, const json& job, const Limits& limits, int count) {
  if (!WarmPythonWorkersEnabled() || !runner.IsSandbox()) return;
  const ProcessSpec like = ZygoteSandbox(job, limits);
  Pool& pool = ThePool();
  const std::string key = PoolKey(like);
  std::lock_guard<std::mutex> lock(pool.mu);
  if (pool.failed.count(key)) return;
  int there = 0;  // started, or on their way
  for (auto& e : pool.entries) there += e->key == key;
  // Each entry is added here, under the lock, before its thread runs: a second call then
  // counts it, and a job that asks meanwhile waits for it instead of starting its own.
  for (; there < std::min(count, PerKind()); ++there) {
    Pool::Entry* raw = NewEntry(pool, key);
    std::thread([like, raw] {
      std::unique_lock<std::mutex> held(ThePool().mu);
      Pool::Entry* entry = Launch(raw, like, held);
      held.unlock();
      if (entry) Release(entry);
    }).detach();
  }
}

}  // namespace kforge
