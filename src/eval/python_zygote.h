// Warm Python workers (docs/python-worker.md "Warm workers"): a resident sandboxed process with
// Python started and PyTorch (and Triton) imported, no device touched, that forks a fresh
// supervisor for each job. A cold job pays the interpreter's start and `import torch` (2 s on a
// 2-core VM, 4 to 5 s on an H200 host) in every one of its processes; a warm one pays a fork.
//
// What stays as in a cold job: the sandbox (namespaces, seccomp, read-only filesystem, the
// unprivileged user), one supervisor and one candidate child per job, a fresh process for every
// candidate, result.json confirmed by a hash on a channel no job process holds (the zygote's
// stdout). What the zygote adds so that jobs cannot reach each other: after a job's supervisor
// has ended it kills every other process of the sandbox (kill(-1) in its PID namespace) and
// reaps them as their subreaper, and empties /tmp, /var/tmp and /dev/shm; the orchestrator then
// removes whatever the job left in the zygote's folder and makes the next job's folder under a
// fresh random name. Jobs of the baseline user (65533) never share a zygote with jobs of user
// nobody; a zygote serves one job at a time.
#ifndef KFORGE_EVAL_PYTHON_ZYGOTE_H_
#define KFORGE_EVAL_PYTHON_ZYGOTE_H_

#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/sandbox_uids.h"
#include "base/subprocess.h"
#include "eval/python_worker.h"

namespace kforge {

class PythonZygote {
 public:
  // Starts `kforge_pyworker.py zygote` in a sandbox like the one `like` (a prepared job's
  // command) describes: its user, environment, readable and writable folders. Waits up to
  // `ready_seconds` for it to say it is ready. An error says why it cannot serve (no PID
  // namespace, PyTorch does not import, CUDA initialised by an import, ...).
  static Result<std::unique_ptr<PythonZygote>> Start(const ProcessSpec& like, double ready_seconds);
  // Closes its stdin (it exits when idle), ends it if it does not, removes its folders.
  ~PythonZygote();
  PythonZygote(const PythonZygote&) = delete;
  PythonZygote& operator=(const PythonZygote&) = delete;

  // The folder jobs are prepared in (PreparePythonJob's `parent`).
  const std::filesystem::path& root() const { return root_; }
  // Removes everything in root(): what an earlier job may have left. Call before preparing a job.
  void ClearRoot();
  // Runs the job prepared in `dir` (below root()) with `spec`'s environment and limits; returns
  // how the job's supervisor ended, as a ProcessResult of a cold job would say it. The job's
  // wall-clock limit is kept here: past it the job is cancelled, and a zygote that does not
  // answer is ended (the job then timed out).
  ProcessResult Run(const ProcessSpec& spec, const std::filesystem::path& dir);
  // False once the zygote has ended or said it cannot go on.
  bool usable() const;
  // The user id its jobs run as: as root, one leased for this zygote's life for jobs of user
  // nobody (base/sandbox_uids.h), so that a job that forks or starts threads up to its limit
  // takes none from the jobs of other zygotes; else the sandbox user it was started with.
  uint32_t uid() const { return spec_.limits.sandbox_uid; }

 private:
  PythonZygote() = default;
  void OnStdout(std::string_view chunk);
  void Cancel();  // ends the sandbox

  std::filesystem::path root_, lib_;
  UidLease lease_;
  std::unique_ptr<ProcessRunner> runner_;
  ProcessSpec spec_;
  std::thread thread_;
  int stdin_w_ = -1, cancel_w_ = -1, stdin_r_ = -1, cancel_r_ = -1;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string partial_;
  std::map<std::string, nlohmann::json> done_;
  std::string error_;
  bool ready_ = false, ended_ = false, unusable_ = false;
  ProcessResult final_;
  int next_id_ = 0;
};

// Whether zygotes import Triton ahead (where an NVIDIA device is present: Triton compiled for
// it); then jobs of Triton's interpreter (job.json "interpret") run cold.
bool PreloadTriton();

// True unless KFORGE_WARM_PYTHON=0.
bool WarmPythonWorkersEnabled();

// How many warm workers of one kind a program that judges `jobs` candidates at once wants
// (kforge bench -j, kforge_judge_bench --jobs): two per judgement (its candidate's job and its
// standby timed-reference job), at most 32, unless $KFORGE_WARM_PYTHON_PER_KIND says. Call
// before the first job.
void SetWarmPythonWorkersPerKind(int jobs);

// Runs `job` in a warm worker of this process's pool when one can serve it (started on first
// need, at most $KFORGE_WARM_PYTHON_PER_KIND, default 2 (SetWarmPythonWorkersPerKind), per user
// and sandbox shape; only on the
// real sandbox runner, never on a fake); nullopt when none can, and the caller runs the job cold.
// A pool whose zygote failed to start is not tried again by this process.
std::optional<WorkerRun> RunInWarmPythonWorker(ProcessRunner& runner, const nlohmann::json& job,
                                               const PythonJobFiles& files, const Limits& limits);

// A job started in a warm worker: its folder (below the zygote's root) and its result to come.
struct WarmPythonJob {
  std::filesystem::path dir;
  std::future<WorkerRun> done;
};

// As RunInWarmPythonWorker, but returns once the job is handed to its zygote: for a standby job
// (job.json "await_sets"), whose folder the orchestrator writes its sets into while it waits.
std::optional<WarmPythonJob> StartInWarmPythonWorker(ProcessRunner& runner, const nlohmann::json& job,
                                                     const PythonJobFiles& files, const Limits& limits);

// Starts, in the background, zygotes that would serve `job` (a job.json as for
// RunInWarmPythonWorker) until `count` of them are there or on their way (at most
// $KFORGE_WARM_PYTHON_PER_KIND): a judgement calls it first thing, so that they import PyTorch
// while the problem loads and the candidate compiles. A zygote serves one job at a time: a
// judgement whose standby reference job holds one for the candidate's whole run asks for two.
void PrewarmPythonWorker(ProcessRunner& runner, const nlohmann::json& job, const Limits& limits, int count = 1);

// The zygotes this process has started (for the judge's benchmark and tests).
int WarmPythonWorkersStarted();

}  // namespace kforge

#endif  // KFORGE_EVAL_PYTHON_ZYGOTE_H_
