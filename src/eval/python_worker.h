// The orchestrator's side of the Python worker (python/kforge_pyworker.py, protocol in
// docs/python-worker.md): it hosts PyTorch references, the eager and torch.compile baselines and
// Python candidates (KernelBench ModelNew files, Triton kf_run modules). Jobs run in the same
// sandbox as kforge-worker; what they write is read back as a WorkerRun.
#ifndef KFORGE_EVAL_PYTHON_WORKER_H_
#define KFORGE_EVAL_PYTHON_WORKER_H_

#include <cstdint>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/registry.h"
#include "base/subprocess.h"
#include "eval/worker_client.h"

namespace kforge {

// The interpreter: $KFORGE_PYTHON, else /opt/kforge/venv/bin/python3 (made by scripts/setup),
// else /usr/bin/python3, else python3 on PATH.
std::string PythonInterpreter();
// DataDir()/python/kforge_pyworker.py.
std::filesystem::path PythonWorkerScript();
// The worker's files, by name: kforge_pyworker.py (the supervisor), kforge_pychild.py (the
// child it forks), kforge_kernels.py (the child's kernel recording) and kforge_inputs.py (the
// child's input generator, GenerateTensor's twin), all under DataDir()/python; every job folder
// gets them all.
std::map<std::string, std::filesystem::path> PythonWorkerFiles();

// `kforge_pyworker.py probe [module]` in the sandbox, once per process and module: {"python",
// "torch", "torch_compile", "cuda", "devices", "triton"} or {"error"}, and for `module` (a
// backend's python_module) its version under its name or why it does not import under
// "<module>_error". Only the backend that needs a module asks for it: importing CuTe DSL takes
// about a second. Unavailable when Python itself cannot start.
Result<nlohmann::json> ProbePython(ProcessRunner& runner, const std::string& module = "", bool* kept = nullptr);

// ProbePython's answer without the in-process memo (`*kept`, in either: whether it was read from
// disk): the answer kept on disk (the cache's
// python/probes) while the interpreter, the probe job's environment, the worker's files, the
// GPUs (NVIDIA driver, cards, device nodes) and every file and folder the answer rests on (each
// imported module's, every folder on the import path) are as they were, else a probe run, kept
// for next time. KFORGE_KEEP_PYTHON_PROBE=0 probes every time. Importing
// PyTorch and Triton and opening CUDA was most of a warm one-shot `kforge eval` of a KernelBench
// problem on the development VM (1.4 s; 0.3 s with the answer kept).
Result<nlohmann::json> ProbePythonOnce(ProcessRunner& runner, const std::string& module = "", bool* kept = nullptr);

// Why Python-hosted backend `b` cannot judge with the interpreter `probe` describes (PyTorch
// missing, b.python_module missing, with b.python_module_install's how-to-fix, or no CUDA
// device where b.gpu_required); "" when it can. `kforge doctor` and the judge say the same.
std::string PythonBackendUnusable(const BackendSpec& b, const nlohmann::json& probe);

// The torch device a Python job uses: "cuda:<device>" when the probe saw a CUDA device and
// `want_gpu`, else "cpu". $KFORGE_TORCH_DEVICE overrides ("cpu" or "cuda:0").
std::string TorchDevice(const nlohmann::json& probe, bool want_gpu, int device);

// What a Python job's folder is assumed to hold at most, for where it goes (MakeJobDir): its
// outputs are only known once the module has run, and a KernelBench problem's check outputs
// reach hundreds of megabytes.
inline constexpr uint64_t kPythonJobBytes = uint64_t{4} << 30;

struct PythonJobFiles {
  // Files copied into the job folder: name in the folder -> source path.
  std::map<std::string, std::filesystem::path> copies;
  // Raw files written into the job folder: name -> bytes.
  std::map<std::string, std::string> blobs;
};

// The command that runs the worker on the job in folder `dir`, with its environment, readable
// and writable paths (its compile caches, made if missing) and limits; writes nothing into `dir`.
ProcessSpec PythonJobSpec(const nlohmann::json& job, const Limits& limits, const std::filesystem::path& dir);
// Writes job.json and the files into a fresh folder (under `parent` when given, else a new
// temporary one) and returns PythonJobSpec for it.
Result<ProcessSpec> PreparePythonJob(const nlohmann::json& job, const PythonJobFiles& files, const Limits& limits,
                                     std::filesystem::path* job_dir, const std::filesystem::path& parent = {});
// A prepared job that will not run: what PreparePythonJob lent it (its torch extension folder)
// goes back, and its caches are not saved.
void AbandonPythonJob(const std::filesystem::path& dir);
// A prepared job's outcome once its worker ended as `process` says: stage, result.json,
// verified (VerifyPythonResult), with its wall time.
WorkerRun FinishPythonJob(ProcessResult process, const std::filesystem::path& dir);

// Writes job.json and the files into a fresh folder and runs the worker there, in a warm
// worker (eval/python_zygote.h) where one can serve the job, else in a sandbox of its own. What comes back
// is what the worker's supervisor wrote, verified (VerifyPythonResult); a job whose result
// fails the check carries error {"stage": "integrity"} (or nothing, when the worker was killed).
Result<WorkerRun> RunPythonWorker(ProcessRunner& runner, const nlohmann::json& job,
                                  const PythonJobFiles& files, const Limits& limits);

// A Python job started ahead of its work (job.json's "await_sets", docs/python-worker.md): its
// supervisor and child start (in a warm worker where one can serve it, else cold), import
// PyTorch and open the device under the shared device lock, then hold no lock and wait for the
// sets, which the orchestrator gives when it knows them. The timed-reference job of a Python
// candidate waits so while the candidate's own job runs, in a sandbox of its own: a warm
// judgement does not wait for its start nor for its device context.
class StandbyPythonJob {
 public:
  // `job` is a job.json without sets; its wall-clock limit must cover the wait.
  static Result<std::unique_ptr<StandbyPythonJob>> Start(ProcessRunner& runner, nlohmann::json job,
                                                         const PythonJobFiles& files, const Limits& limits);
  // Gives the job its sets and waits for its result (as RunPythonWorker's). Once only.
  WorkerRun Run(const nlohmann::json& sets);
  // A job never given its sets is cancelled and waited for; its folders are removed.
  ~StandbyPythonJob();

 private:
  StandbyPythonJob() = default;
  std::filesystem::path dir_;
  std::future<WorkerRun> done_;
  bool given_ = false;
};

// Lowercase hex SHA-256 (FIPS 180-4) of `data`.

// Checks what a Python job left against its supervisor's last stdout line,
// `kforge-result <SHA-256 of result.json>`, and every file result.json lists under "files"
// against its piece digest; then keeps the verified bytes where nothing still running as the
// sandbox user can change them afterwards: in run->held (at most $KFORGE_HELD_OUTPUTS_MB, default
// 4096, in all), else in a fresh folder of the orchestrator's; run->dir is that folder, with
// result.json, either way.
// No line, a mismatch or a missing file: run->result (and run->report) becomes {"error":
// {"stage": "integrity"}} when the worker exited normally, else empty (how it ended says the rest).
void VerifyPythonResult(WorkerRun* run);

// The timed runs of a Python job as the orchestrator judges them (docs/python-worker.md): the
// child's own timers (device_ms, host_ms) are the candidate's to patch, the supervisor's wall
// clock around each call (wall_ms, minus the round trip measured before the candidate loaded,
// overhead_ms) is not. The judged median is kforge-worker's (TimingFromWorker): that of
// device_ms, never below the median of wall_ms less overhead_ms and its tolerance.
struct PythonTiming {
  std::vector<double> device_ms, host_ms, wall_ms, prepare_ms, collect_ms;
  std::vector<int> sets;  // the input set of each run (empty when the record has none)
  double overhead_ms = 0;
  Calibration calibration;  // the null runs before the candidate was loaded (zeros: none reported)
};
// Reads a report's timing; an error when its arrays are missing or of unequal lengths.
Result<PythonTiming> ParsePythonTiming(const WorkerTiming& timing);
// Copies a Python job's wall time and per-stage seconds into a verdict's stages as
// "<prefix>.wall", "<prefix>.<stage>" (where the time of a judgement goes).
void AddPythonStages(const std::string& prefix, const WorkerRun& run, nlohmann::json* stages);

}  // namespace kforge

#endif  // KFORGE_EVAL_PYTHON_WORKER_H_
