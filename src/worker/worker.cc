// The worker's side of an evaluation. Order of work for one job:
//   open device -> load candidate -> upload every input set -> checks (each set run twice,
//   outputs poisoned with two different patterns) -> timing (warm-up, then runs rotating over
//   input sets, each after poisoning outputs and flushing the cache) -> precision report.
// result.json is rewritten after each step so that a crash keeps the steps before it.
#include "worker/worker.h"

#include <dirent.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "backend/registry.h"
#include "base/files.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int CountThreads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// Bytes after each output buffer, filled with a canary and checked after every check run:
// a candidate that writes past the end of an output (a hard-coded size, a vector tail) is
// caught even when the write lands in memory it could legally touch.
constexpr size_t kGuardBytes = 4096;
constexpr unsigned char kCanary = 0xC5;

void Stage(const std::string& what) { std::fprintf(stderr, "kforge-worker: %s\n", what.c_str()); }

struct SetBuffers {
  std::vector<LaunchTensor> inputs, outputs;
  BufferId scratch = -1;
  int64_t scratch_bytes = 0;
  std::vector<std::string> input_hashes;  // of the uploaded bytes
};

class JobRunner {
 public:
  JobRunner(const Job& job, fs::path dir) : job_(job), dir_(std::move(dir)) {}
  Status Run();

 private:
  Status Save() { return WriteFileAtomic(dir_ / "result.json", result_.dump(1)); }
  Status Fail(const std::string& stage, const std::string& message) {
    result_["error"] = {{"stage", stage}, {"message", message}};
    return Save();
  }
  Status Upload(int set);
  LaunchArgs Args(int set) const;
  Status Poison(int set, int which);
  Result<std::vector<std::string>> HashInputs(int set);
  Result<std::string> CheckGuards(int set);
  Status DownloadOutputs(int set, const std::function<std::string(const std::string&)>& name);
  Status RunChecks();
  Status RunTiming();
  Status Warmup(const TimingPlan& plan);

  const Job& job_;
  fs::path dir_;
  std::unique_ptr<Device> device_;
  std::vector<SetBuffers> sets_;
  json result_ = json::object();
};

Status JobRunner::Upload(int set) {
  const InputSet& in = job_.sets[set];
  SetBuffers& b = sets_[set];
  for (const TensorFile& t : in.inputs) {
    KF_ASSIGN_OR_RETURN(std::string bytes, ReadFile(dir_ / t.file));
    if (bytes.size() != t.shape.bytes())
      return Status::InvalidArgument("input file " + t.file + " has the wrong size");
    KF_ASSIGN_OR_RETURN(BufferId id, device_->Alloc(bytes.size()));
    KF_RETURN_IF_ERROR(device_->Write(id, bytes.data(), bytes.size()));
    b.inputs.push_back({t.shape, id});
    b.input_hashes.push_back(HashHex(bytes.data(), bytes.size()));
  }
  for (const TensorFile& t : in.outputs) {
    KF_ASSIGN_OR_RETURN(BufferId id, device_->Alloc(t.shape.bytes() + kGuardBytes));
    KF_RETURN_IF_ERROR(device_->Fill(id, &kCanary, 1, t.shape.bytes() + kGuardBytes));
    b.outputs.push_back({t.shape, id});
  }
  KF_ASSIGN_OR_RETURN(b.scratch_bytes, device_->ScratchBytes(Args(set)));
  if (b.scratch_bytes > 0) {
    KF_ASSIGN_OR_RETURN(b.scratch, device_->Alloc(static_cast<size_t>(b.scratch_bytes)));
  }
  return Status::Ok();
}

LaunchArgs JobRunner::Args(int set) const {
  const SetBuffers& b = sets_[set];
  LaunchArgs a;
  a.inputs = b.inputs;
  a.outputs = b.outputs;
  a.attrs = job_.sets[set].attrs;
  a.scratch = b.scratch;
  a.scratch_bytes = b.scratch_bytes;
  return a;
}

Status JobRunner::Poison(int set, int which) {
  const SetBuffers& b = sets_[set];
  for (const LaunchTensor& t : b.outputs) {
    unsigned char pattern[8];
    size_t n = PoisonPattern(t.shape.dtype, which, pattern);
    KF_RETURN_IF_ERROR(device_->Fill(t.buffer, pattern, n, t.shape.bytes()));
  }
  if (b.scratch >= 0) {
    unsigned char byte = which ? 0x5a : 0xa5;
    KF_RETURN_IF_ERROR(device_->Fill(b.scratch, &byte, 1, static_cast<size_t>(b.scratch_bytes)));
  }
  return device_->Synchronize();
}

Result<std::vector<std::string>> JobRunner::HashInputs(int set) {
  std::vector<std::string> hashes;
  for (const LaunchTensor& t : sets_[set].inputs) {
    std::string bytes(t.shape.bytes(), '\0');
    KF_RETURN_IF_ERROR(device_->Read(t.buffer, bytes.data(), bytes.size()));
    hashes.push_back(HashHex(bytes.data(), bytes.size()));
  }
  return hashes;
}

Result<std::string> JobRunner::CheckGuards(int set) {
  for (const LaunchTensor& t : sets_[set].outputs) {
    std::string bytes(t.shape.bytes() + kGuardBytes, '\0');
    KF_RETURN_IF_ERROR(device_->Read(t.buffer, bytes.data(), bytes.size()));
    for (size_t k = t.shape.bytes(); k < bytes.size(); ++k)
      if (static_cast<unsigned char>(bytes[k]) != kCanary)
        return "wrote past the end of output '" + t.shape.name + "' (byte " + std::to_string(k - t.shape.bytes()) + " after it)";
  }
  return std::string();
}

Status JobRunner::DownloadOutputs(int set,
                                  const std::function<std::string(const std::string&)>& name) {
  for (const LaunchTensor& t : sets_[set].outputs) {
    std::string bytes(t.shape.bytes(), '\0');
    KF_RETURN_IF_ERROR(device_->Read(t.buffer, bytes.data(), bytes.size()));
    KF_RETURN_IF_ERROR(WriteFile(dir_ / name(t.shape.name), bytes.data(), bytes.size()));
  }
  return Status::Ok();
}

Status JobRunner::RunChecks() {
  result_["checks"] = json::array();
  for (int set : job_.checks) {
    json check = {{"set", set}};
    for (int which = 0; which < (job_.check_twice ? 2 : 1); ++which) {
      char tag = which ? 'b' : 'a';
      Stage("check set " + std::to_string(set) + " poison " + tag);
      KF_RETURN_IF_ERROR(Poison(set, which));
      Result<LaunchTiming> t = device_->Launch(Args(set));
      if (!t.ok()) return Fail("check set " + std::to_string(set), t.status().message());
      check[std::string("ms_") + tag] = t->device_ms;
      if (!result_.contains("threads_after_first_run")) result_["threads_after_first_run"] = CountThreads();
      KF_ASSIGN_OR_RETURN(std::string overrun, CheckGuards(set));
      if (!overrun.empty()) check["overrun"] = overrun;
      KF_RETURN_IF_ERROR(DownloadOutputs(set, [&](const std::string& n) { return CheckOutputFile(set, tag, n); }));
    }
    KF_ASSIGN_OR_RETURN(std::vector<std::string> hashes, HashInputs(set));
    check["input_hashes_before"] = sets_[set].input_hashes;
    check["input_hashes_after"] = hashes;
    result_["checks"].push_back(check);
    result_["threads_after_checks"] = CountThreads();
    KF_RETURN_IF_ERROR(Save());
  }
  return Status::Ok();
}

Status JobRunner::Warmup(const TimingPlan& plan) {
  double start = NowMs();
  for (int i = 0; i < 1000 && (i < plan.warmup_runs || NowMs() - start < plan.warmup_ms); ++i) {
    int set = plan.sets[i % plan.sets.size()];
    Result<LaunchTiming> t = device_->Launch(Args(set));
    if (!t.ok()) return Fail("warm-up", t.status().message());
  }
  return Status::Ok();
}

double CoefficientOfVariation(const std::vector<double>& xs) {
  if (xs.size() < 2) return 1.0;
  double mean = 0, var = 0;
  for (double x : xs) mean += x;
  mean /= xs.size();
  for (double x : xs) var += (x - mean) * (x - mean);
  var /= xs.size() - 1;
  return mean > 0 ? std::sqrt(var) / mean : 1.0;
}

Status JobRunner::RunTiming() {
  const TimingPlan& plan = *job_.timing;
  Stage("warm-up");
  KF_RETURN_IF_ERROR(Warmup(plan));
  if (result_.contains("error")) return Status::Ok();
  int threads_before = CountThreads();
  std::vector<double> device_ms, host_ms;
  std::vector<int> used;
  double start = NowMs();
  Stage("timing");
  for (int i = 0; i < plan.max_runs; ++i) {
    int set = plan.sets[i % plan.sets.size()];
    KF_RETURN_IF_ERROR(Poison(set, i % 2));
    if (plan.flush) KF_RETURN_IF_ERROR(device_->FlushCaches());
    KF_RETURN_IF_ERROR(device_->Synchronize());
    Result<LaunchTiming> t = device_->Launch(Args(set));
    if (!t.ok()) return Fail("timed run " + std::to_string(i), t.status().message());
    device_ms.push_back(t->device_ms);
    host_ms.push_back(t->host_ms);
    used.push_back(set);
    double elapsed = NowMs() - start;
    int n = i + 1;
    if (n >= plan.min_runs && (CoefficientOfVariation(device_ms) <= plan.cv_target || elapsed >= plan.budget_ms)) break;
    if (n >= 3 && elapsed >= 2 * plan.budget_ms) break;
  }
  int last = used.back();
  KF_RETURN_IF_ERROR(DownloadOutputs(last, TimedOutputFile));
  json timing = {{"device_ms", device_ms}, {"host_ms", host_ms}, {"sets_used", used},
                 {"last_set", last}, {"threads_before", threads_before},
                 {"threads_after", CountThreads()}, {"input_hashes_after", json::object()}};
  for (int set : plan.sets) {
    KF_ASSIGN_OR_RETURN(std::vector<std::string> hashes, HashInputs(set));
    timing["input_hashes_after"][std::to_string(set)] = hashes;
    timing["input_hashes_before"][std::to_string(set)] = sets_[set].input_hashes;
  }
  result_["timing"] = timing;
  return Save();
}

Status JobRunner::Run() {
  const BackendInfo* backend = FindBackend(job_.backend);
  if (!backend) return Status::InvalidArgument("unknown backend " + job_.backend);
  if (!backend->open) return Status::InvalidArgument("backend " + job_.backend + " runs in the Python worker, not in kforge-worker");
  Stage("open device");
  Result<std::unique_ptr<Device>> dev = backend->open(job_.device);
  if (!dev.ok()) return Fail("open device", dev.status().message());
  device_ = std::move(dev).value();
  result_["fingerprint"] = device_->Fingerprint();
  result_["llc_bytes"] = device_->LastLevelCacheBytes();
  if (job_.peaks) {
    Stage("peaks");
    Result<Peaks> p = device_->MeasurePeaks();
    if (!p.ok()) return Fail("peaks", p.status().message());
    result_["peaks"] = {{"bandwidth_gbs", p->bandwidth_gbs}, {"fp32_gflops", p->fp32_gflops}, {"detail", p->detail}};
    return Save();
  }
  Stage("load");
  KernelSpec spec{(dir_ / job_.library).string(), job_.entry, ""};
  if (!job_.program_source_file.empty()) {
    KF_ASSIGN_OR_RETURN(spec.program_source, ReadFile(dir_ / job_.program_source_file));
  }
  Status loaded = device_->Load(spec);
  if (!loaded.ok()) return Fail("load", loaded.message());
  sets_.resize(job_.sets.size());
  for (size_t s = 0; s < job_.sets.size(); ++s) {
    Status up = Upload(static_cast<int>(s));
    if (!up.ok()) return Fail("upload", up.message());
  }
  KF_RETURN_IF_ERROR(Save());
  KF_RETURN_IF_ERROR(RunChecks());
  if (!result_.contains("error") && job_.timing) KF_RETURN_IF_ERROR(RunTiming());
  result_["precision"] = device_->PrecisionReport();
  result_["done"] = true;
  Stage("done");
  return Save();
}

}  // namespace

Status RunJob(const Job& job, const fs::path& dir) { return JobRunner(job, dir).Run(); }

Status ProbeBackend(const std::string& name, int device) {
  const BackendInfo* backend = FindBackend(name);
  if (!backend) return Status::InvalidArgument("unknown backend '" + name + "'; known: " + BackendNames());
  json out = {{"backend", name}};
  if (!backend->list_devices || !backend->open) {
    out["error"] = "backend " + name + " runs in the Python worker (python/kforge_pyworker.py), not in kforge-worker";
    std::cout << out.dump() << std::endl;
    return Status::Ok();
  }
  Result<std::vector<std::string>> devices = backend->list_devices();
  if (!devices.ok()) {
    out["error"] = devices.status().message();
  } else {
    out["devices"] = *devices;
    Result<std::unique_ptr<Device>> dev = backend->open(device);
    if (dev.ok()) {
      out["fingerprint"] = (*dev)->Fingerprint();
      Result<TheoreticalPeaks> peaks = (*dev)->ComputeTheoreticalPeaks();
      if (peaks.ok()) out["theoretical_peaks"] = TheoreticalPeaksToJson(*peaks);
      else out["theoretical_peaks_error"] = peaks.status().message();
    } else {
      out["error"] = dev.status().message();
    }
  }
  std::cout << out.dump() << std::endl;
  return Status::Ok();
}

}  // namespace kforge
