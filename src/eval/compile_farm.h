// The compile farm: candidates built ahead of their judgement, several at once.
//
// A loop iteration asks the model for N candidates and the judge takes them one at a time
// (timed runs need the device alone). Their builds need no device: the farm starts them all on
// the machine's cores as soon as the candidates exist, so that each judgement's compile gate
// finds its library built, or waits for the build already running (eval/compiler.h keeps one
// build per content hash in a process). Builds are the same sandboxed, content-addressed
// Compile calls the judge makes; the farm adds no trust and skips nothing the judge checks.
//
// Python candidates (Triton, load_inline) build inside the worker when they load: not here.
#ifndef KFORGE_EVAL_COMPILE_FARM_H_
#define KFORGE_EVAL_COMPILE_FARM_H_

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/subprocess.h"
#include "kforge/eval.h"
#include "kforge/problem.h"

namespace kforge {

class CompileFarm {
 public:
  // `jobs` builds at once; 0: one per core.
  explicit CompileFarm(ProcessRunner& runner, int jobs = 0);
  ~CompileFarm();  // waits for the builds already started; drops the queued ones
  CompileFarm(const CompileFarm&) = delete;
  CompileFarm& operator=(const CompileFarm&) = delete;

  // Queues the builds `Evaluate(problem, candidate, options)` will need: the problem's C++
  // reference, its seed when baselines are timed, and the candidate. Nothing for a Python candidate or one the static check
  // refuses (the judge says why). Returns at once.
  void Submit(const Problem& problem, const std::filesystem::path& candidate, const EvalOptions& options);
  // Until every submitted build has ended.
  void Wait();
  int jobs() const { return static_cast<int>(threads_.size()); }
  int builds_started() const;

 private:
  void Work();

  ProcessRunner& runner_;
  mutable std::mutex mu_;
  std::condition_variable more_, idle_;
  std::deque<std::function<void()>> queue_;
  int running_ = 0, started_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Whether judging may start while the farm still builds: not when `backend`'s device may be the
// host CPU (its timed runs would share the cores with compilers).
bool MayJudgeWhileBuilding(const std::string& backend);

}  // namespace kforge

#endif  // KFORGE_EVAL_COMPILE_FARM_H_
