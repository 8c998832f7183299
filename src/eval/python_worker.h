// The orchestrator's side of the Python worker (python/kforge_pyworker.py, protocol in
// docs/python-worker.md): it hosts PyTorch references, the eager and torch.compile baselines and
// Python candidates (KernelBench ModelNew files, Triton kf_run modules). Jobs run in the same
// sandbox as kforge-worker; what they write is read back as a WorkerRun.
#ifndef KFORGE_EVAL_PYTHON_WORKER_H_
#define KFORGE_EVAL_PYTHON_WORKER_H_

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "base/subprocess.h"
#include "eval/worker_client.h"

namespace kforge {

// The interpreter: $KFORGE_PYTHON, else /opt/kforge/venv/bin/python3 (made by scripts/setup),
// else /usr/bin/python3, else python3 on PATH.
std::string PythonInterpreter();
// DataDir()/python/kforge_pyworker.py.
std::filesystem::path PythonWorkerScript();

// `kforge_pyworker.py probe` in the sandbox, once per process: {"python", "torch",
// "torch_compile", "cuda", "devices", "triton"} or {"error"}. Unavailable when Python itself
// cannot start.
Result<nlohmann::json> ProbePython(ProcessRunner& runner);

// The torch device a Python job uses: "cuda:<device>" when the probe saw a CUDA device and
// `want_gpu`, else "cpu". $KFORGE_TORCH_DEVICE overrides ("cpu" or "cuda:0").
std::string TorchDevice(const nlohmann::json& probe, bool want_gpu, int device);

struct PythonJobFiles {
  // Files copied into the job folder: name in the folder -> source path.
  std::map<std::string, std::filesystem::path> copies;
  // Raw files written into the job folder: name -> bytes.
  std::map<std::string, std::string> blobs;
};

// Writes job.json and the files into a fresh folder and runs the worker there.
Result<WorkerRun> RunPythonWorker(ProcessRunner& runner, const nlohmann::json& job,
                                  const PythonJobFiles& files, const Limits& limits);

// Copies a Python job's wall time and per-stage seconds into a verdict's stages as
// "<prefix>.wall", "<prefix>.<stage>" (where the time of a judgement goes).
void AddPythonStages(const std::string& prefix, const WorkerRun& run, nlohmann::json* stages);

}  // namespace kforge

#endif  // KFORGE_EVAL_PYTHON_WORKER_H_
