#include "eval/compile_farm.h"

#include <algorithm>

#include "backend/registry.h"
#include "base/files.h"
#include "eval/compiler.h"
#include "eval/static_check.h"

namespace kforge {

namespace fs = std::filesystem;

CompileFarm::CompileFarm(ProcessRunner& runner, int jobs) : runner_(runner) {
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i < jobs; ++i) threads_.emplace_back([this] { Work(); });
}

CompileFarm::~CompileFarm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  more_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void CompileFarm::Work() {
  for (;;) {
    std::function<void()> build;
    {
      std::unique_lock<std::mutex> lock(mu_);
      more_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      build = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      ++started_;
    }
    build();
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    idle_.notify_all();
  }
}

void CompileFarm::Submit(const Problem& problem, const fs::path& candidate, const EvalOptions& options) {
  const BackendSpec* backend = FindBackend(options.backend);
  if (!backend) return;  // the judge names the unknown backend
  std::vector<std::function<void()>> builds;
  if (problem.format != ProblemFormat::kPyTorch && !problem.reference.empty()) {
    const fs::path reference = problem.reference;
    builds.push_back([this, reference] { (void)Compile(runner_, *FindBackend("cpp"), reference, CompileKind::kReference); });
  }
  // A kernel of `backend` (the seed, the candidate), for the judging device's architecture.
  const int device = options.device;
  auto kernel = [this, backend, device](const fs::path& file) {
    return [this, backend, device, file] {
      (void)Compile(runner_, *backend, file, CompileKind::kCandidate, BuildArch(runner_, *backend, device, nullptr));
    };
  };
  // The seed, which the judgement times as a baseline.
  auto seed = problem.seeds.find(backend->name);
  if (options.baselines && !backend->python_hosted && seed != problem.seeds.end() && seed->second.extension() != ".py")
    builds.push_back(kernel(seed->second));
  if (!backend->python_hosted && candidate.extension() != ".py") {
    Result<std::string> source = ReadFile(candidate);
    // The judge reads and checks the source again: this is only to spare the compiler a
    // candidate it will refuse anyway.
    if (source.ok() && (!options.static_check || StaticCheck(*source, backend->deny).empty()))
      builds.push_back(kernel(candidate));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& b : builds) queue_.push_back(std::move(b));
  }
  more_.notify_all();
}

void CompileFarm::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return queue_.empty() && running_ == 0; });
}

int CompileFarm::builds_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return started_;
}

bool MayJudgeWhileBuilding(const std::string& backend) {
  const BackendSpec* b = FindBackend(backend);
  return b && !b->device_may_be_host;
}

}  // namespace kforge
