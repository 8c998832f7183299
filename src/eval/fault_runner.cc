#include "eval/fault_runner.h"

#include <csignal>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;

const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kTimeout: return "timeout";
    case Fault::kCrash: return "crash";
    case Fault::kOutOfMemory: return "out of memory";
    case Fault::kStartFailure: return "start failure";
    case Fault::kOutputFlood: return "output flood";
    case Fault::kFolderFlood: return "folder flood";
  }
  return "?";
}

std::string FaultInjectingRunner::RoleOf(const ProcessSpec& spec) {
  const std::vector<std::string>& a = spec.argv;
  for (size_t i = 0; i + 2 < a.size(); ++i) {
    const std::string program = fs::path(a[i]).filename().string();
    if (program != "kforge-worker" && program != "kforge_pyworker.py") continue;
    if (a[i + 1] == "probe") return "probe";
    if (a[i + 1] != "run") continue;
    Result<std::string> text = ReadFile(fs::path(a[i + 2]) / "job.json");
    nlohmann::json job = text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
    if (!job.is_object()) return "worker";
    if (job.contains("mode")) return job.value("mode", "worker");  // the Python worker's job
    if (job.value("peaks", false)) return "peaks";                  // the device's measured peaks
    return job.value("entry", "").rfind("kf_reference", 0) == 0 ? "reference" : "candidate";
  }
  for (const std::string& s : a)
    if (fs::path(s).filename() == "kforge_pyworker.py" || fs::path(s).filename() == "kforge-worker") return "probe";
  return "compile";
}

ProcessResult FaultInjectingRunner::Run(const ProcessSpec& spec) {
  bool inject = false;
  if ((!filter_ || filter_(spec)) && (role_ == "any" || RoleOf(spec) == role_)) {
    std::lock_guard<std::mutex> lock(mu_);
    inject = ++seen_ == nth_;
    injected_ += inject;
  }
  if (!inject) return real_.Run(spec);
  ProcessResult ran;
  ran.limits = spec.limits;
  if (when_ == FaultWhen::kAfterRun) ran = real_.Run(spec);
  return Inject(spec, std::move(ran));
}

ProcessResult FaultInjectingRunner::Inject(const ProcessSpec& spec, ProcessResult r) const {
  r.limits = spec.limits;
  r.exit_code = -1;
  r.signal = 0;
  switch (fault_) {
    case Fault::kTimeout:
      r.end = ProcessResult::End::kTimedOut;
      r.signal = SIGKILL;
      r.wall_seconds = spec.limits.wall_seconds;
      break;
    case Fault::kCrash:
      r.end = ProcessResult::End::kSignaled;
      r.signal = SIGSEGV;
      break;
    case Fault::kOutOfMemory:
      // What the kernel's OOM killer leaves: SIGKILL from outside, a large peak resident size.
      r.end = ProcessResult::End::kSignaled;
      r.signal = SIGKILL;
      r.max_rss_kb = std::max<int64_t>(r.max_rss_kb, int64_t{20} << 20);  // 20 GiB
      break;
    case Fault::kStartFailure:
      r = ProcessResult();
      r.limits = spec.limits;
      r.end = ProcessResult::End::kStartFailed;
      r.start_error = "clone: Resource temporarily unavailable";
      break;
    case Fault::kOutputFlood:
      r.end = ProcessResult::End::kOutputFlood;
      r.signal = SIGKILL;
      r.out_total = spec.limits.output_kill_bytes + 1;
      break;
    case Fault::kFolderFlood:
      r.end = ProcessResult::End::kFolderFlood;
      r.signal = SIGKILL;
      r.folder_bytes = spec.limits.folder_bytes + 1;
      break;
  }
  return r;
}

int FaultInjectingRunner::injected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return injected_;
}

int FaultInjectingRunner::seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_;
}

}  // namespace kforge
