// The orchestrator's side of the worker protocol: prepares a job folder, runs kforge-worker
// in the sandbox and reads back what it wrote. A worker crash is data (WorkerRun.process),
// not an error Status.
#ifndef KFORGE_EVAL_WORKER_CLIENT_H_
#define KFORGE_EVAL_WORKER_CLIENT_H_

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/device_lock.h"
#include "base/subprocess.h"
#include "eval/inputs.h"
#include "eval/worker_report.h"
#include "worker/protocol.h"

namespace kforge {

struct WorkerRun {
  ProcessResult process;
  // result.json, possibly partial, as read (diagnostics and tests); judges read `report`.
  nlohmann::json result = nlohmann::json::object();
  // `result` parsed (eval/worker_report.h). A result that does not parse is a report holding
  // only an error, stage "result", whose message names the field, and `malformed` is set.
  WorkerReport report;
  bool malformed = false;
  std::filesystem::path dir;                          // the job folder; removed by Cleanup
  // Output files verified against result.json and held in memory instead of copied into `dir`
  // (a Python job's, VerifyPythonResult): ReadOutput and TrustedState::KeepRun take them from here.
  std::shared_ptr<const std::map<std::string, std::string>> held;
  std::string last_stage;                             // from the worker's stderr progress lines
  // The worker's supervisor printed result.json's SHA-256 on its stdout (a channel candidate
  // code never holds) and the file still matches it. Without that, result.json is only a
  // diagnostic: finished() is false.
  bool confirmed = false;
  // The folder belongs to the trusted store (eval/trusted_state.h): Cleanup leaves it.
  bool kept = false;
  // A kept run's files, XXH3-128 as the store recorded them when it kept them: checked instead
  // of the supervisor's SHA-256 piece digests. Only trusted code writes the store, so what is
  // left to catch is a damaged file, and a warm KernelBench judgement read 930 MiB of it.
  std::map<std::string, std::string> kept_digests;
  bool finished() const { return confirmed && report.done; }
  // Sets `result` and parses it into `report` (and `malformed`): every change of the result
  // goes through here, so that the two agree.
  void SetResult(nlohmann::json j);
  // An output file of `bytes` bytes, checked against the digest the supervisor recorded for it
  // in result.json (held files were checked when they were taken). A held file is shared, not
  // copied (a KernelBench GEMM's 14 check outputs are 32 MiB each). The job's folder is the
  // sandbox's: a file of another size, a link or anything but a regular file is an error, never
  // followed or read (ReadUntrustedFile).
  Result<std::shared_ptr<const std::string>> ReadOutput(const std::string& file, size_t bytes) const;
  // The same, into `out`: a float64 reference read straight into its own vector, with no
  // buffer of the file's to fill and copy again.
  Status ReadOutputInto(const std::string& file, void* out, size_t bytes) const;
};

// result.json larger than this is not read (a sandboxed process may have replaced it).
inline constexpr uint64_t kResultJsonMaxBytes = 64ull << 20;

struct WorkerFiles {
  std::filesystem::path library;         // copied in as candidate.so
  std::filesystem::path program_source;  // copied in as program.cl, may be empty
  // Input tensors per set; written as in_<set>_<name>.bin and named in the job.
  std::vector<std::vector<HostTensor>> inputs;
};

// The most a candidate's job folder may hold while it runs (Limits::folder_bytes): twice what
// the folder is expected to hold (the library, the input files, every check's outputs, the
// sampled timed runs') and kJobFolderSlack besides (result.json, a profiler's report). The
// folder is on the host's /dev/shm, RAM no process owns; without the bound a candidate could
// fill it with files of up to the file size limit each.
inline constexpr uint64_t kJobFolderSlack = 512ull << 20;
uint64_t JobFolderLimit(const Job& job, const WorkerFiles& files);

// Fills in job.sets[*].inputs[*].file, job.library and job.program_source_file, writes the
// folder and runs the worker. `limits` apply to the worker process. A non-empty `wrapper`
// runs the worker under another program (a profiler: `ncu ... kforge-worker run <dir>`).
Result<WorkerRun> RunWorker(ProcessRunner& runner, Job job, const WorkerFiles& files,
                            const Limits& limits, const std::vector<std::string>& wrapper = {});

// Runs `kforge-worker probe <backend> <device>` in the sandbox, with the environment jobs get,
// and returns what it printed: {"backend", "devices", "fingerprint", "theoretical_peaks"} (of
// that device) or {"backend", "error"}. A worker that fails or prints no JSON is an
// Unavailable Status saying how it ended.
Result<nlohmann::json> ProbeWorker(ProcessRunner& runner, const std::string& backend, int device = 0);
// The same probe, once per process and device: what it reads (the device's identity, theoretical
// peaks, architecture) does not change while kforge runs, and each probe opens the device (0.4 s
// for a CUDA context on the H200). Only the real sandbox's successful probes are kept; a test's
// fake runner is asked every time.
Result<nlohmann::json> ProbeWorkerOnce(ProcessRunner& runner, const std::string& backend, int device = 0);

// Runs a prepared worker (kforge-worker or the Python worker) whose job folder is `dir`, then
// reads what it left: the last progress stage from stderr and result.json, possibly partial,
// confirmed by the "kforge-result <sha256>" line the worker's supervisor prints last. A
// result.json that does not match it becomes an error record (stage "result").
WorkerRun RunPreparedWorker(ProcessRunner& runner, const ProcessSpec& spec, const std::filesystem::path& dir);
// What RunPreparedWorker reads after the worker's process ended as `process` says.
WorkerRun ReadWorkerRun(ProcessResult process, const std::filesystem::path& dir);

// <cache>/locks/<name>.lock, created readable and writable by every sandbox user: the file
// DeviceLock holds, and that Python jobs lock themselves around timed runs. Empty without a cache.
std::filesystem::path DeviceLockPath(const std::string& name);

// Removes the job folder unless KFORGE_KEEP_TEMP is set or the folder is a kept one.
void Cleanup(const WorkerRun& run);

// Path of kforge-worker: $KFORGE_WORKER, else beside the running executable.
std::filesystem::path WorkerPath();

// kforge-nvcc (backend/cuda/nvcc_lanes.h) beside kforge-worker, which builds with cudafe++ and
// the device compile side by side: the cuda backend's candidates and load_inline's builds go
// through it. "" when it is not there or KFORGE_NVCC_LANES=0.
std::filesystem::path NvccWrapperPath();

// Holds a device's lock exclusive (<cache>/locks/<name>.lock, base/device_lock.h) for as long
// as it lives: around jobs that time or measure and do not lock for themselves (peaks, profiles).
class DeviceLock {
 public:
  explicit DeviceLock(const std::string& name);

 private:
  DeviceLockFile lock_;
};

}  // namespace kforge

#endif  // KFORGE_EVAL_WORKER_CLIENT_H_
