#include "eval/worker_report.h"

#include <limits>

#include "base/stats.h"

namespace kforge {

using nlohmann::json;

namespace {

// Each Read sets *out from `j`, the value at `path` ("timing.samples[1].seed"), or says what is
// wrong with it. Overloads per type, so that a struct's reader is its list of fields.
// Declared first: the containers' readers call the structs' ones, and those the containers'.
template <typename T>
Status Read(const json& j, const std::string& path, std::optional<T>* out);
template <typename T>
Status Read(const json& j, const std::string& path, std::vector<T>* out);
template <typename T>
Status Read(const json& j, const std::string& path, std::map<std::string, T>* out);
Status Read(const json& j, const std::string& path, WorkerError* e);
Status Read(const json& j, const std::string& path, WorkerCheck* c);
Status Read(const json& j, const std::string& path, TimedSample* s);
Status Read(const json& j, const std::string& path, Calibration* c);
Status Read(const json& j, const std::string& path, WorkerTiming* t);
Status Read(const json& j, const std::string& path, WorkerPeaks* p);
Status Read(const json& j, const std::string& path, ReferenceInput* in);
Status Read(const json& j, const std::string& path, ReferenceOutput* out);
Status Read(const json& j, const std::string& path, ReferenceSet* s);

// "is a string, expected a number"; a number or a boolean as it is.
Status WrongType(const std::string& path, const json& j, const char* expected) {
  const std::string is = j.is_number() || j.is_boolean() ? j.dump()
                         : j.is_string()                 ? "a string"
                         : j.is_array()                  ? "an array"
                                                         : "an object";
  return Status::InvalidArgument(path + " is " + is + ", expected " + expected);
}

Status Read(const json& j, const std::string& path, bool* out) {
  if (!j.is_boolean()) return WrongType(path, j, "true or false");
  *out = j.get<bool>();
  return Status::Ok();
}

Status Read(const json& j, const std::string& path, int* out) {
  constexpr int64_t kMin = std::numeric_limits<int>::min(), kMax = std::numeric_limits<int>::max();
  const bool fits = j.is_number_unsigned() ? j.get<uint64_t>() <= uint64_t{kMax}
                                           : j.is_number_integer() && j.get<int64_t>() >= kMin &&
                                                 j.get<int64_t>() <= kMax;
  if (!fits) return WrongType(path, j, "an integer");
  *out = j.get<int>();
  return Status::Ok();
}

Status Read(const json& j, const std::string& path, int64_t* out) {
  if (!j.is_number_integer() ||
      (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}))
    return WrongType(path, j, "an integer");
  *out = j.get<int64_t>();
  return Status::Ok();
}

// Seeds: the full unsigned 64-bit range (kforge-worker draws them so).
Status Read(const json& j, const std::string& path, uint64_t* out) {
  if (!j.is_number_unsigned()) return WrongType(path, j, "a non-negative integer");
  *out = j.get<uint64_t>();
  return Status::Ok();
}

Status Read(const json& j, const std::string& path, double* out) {
  if (!j.is_number()) return WrongType(path, j, "a number");
  *out = j.get<double>();
  return Status::Ok();
}

Status Read(const json& j, const std::string& path, std::string* out) {
  if (!j.is_string()) return WrongType(path, j, "a string");
  *out = j.get<std::string>();
  return Status::Ok();
}

Status Read(const json& j, const std::string&, json* out) {
  *out = j;
  return Status::Ok();
}

template <typename T>
Status Read(const json& j, const std::string& path, std::optional<T>* out) {
  if (j.is_null()) {
    out->reset();
    return Status::Ok();
  }
  T value{};
  KF_RETURN_IF_ERROR(Read(j, path, &value));
  *out = std::move(value);
  return Status::Ok();
}

template <typename T>
Status Read(const json& j, const std::string& path, std::vector<T>* out) {
  if (!j.is_array()) return WrongType(path, j, "an array");
  out->clear();
  for (size_t i = 0; i < j.size(); ++i) {
    T value{};
    KF_RETURN_IF_ERROR(Read(j[i], path + "[" + std::to_string(i) + "]", &value));
    out->push_back(std::move(value));
  }
  return Status::Ok();
}

template <typename T>
Status Read(const json& j, const std::string& path, std::map<std::string, T>* out) {
  if (!j.is_object()) return WrongType(path, j, "an object");
  out->clear();
  for (const auto& [key, v] : j.items()) {
    T value{};
    KF_RETURN_IF_ERROR(Read(v, path + "." + key, &value));
    out->emplace(key, std::move(value));
  }
  return Status::Ok();
}

// Field `key` of object `j` (at `path`) into *out. Absent or null: *out keeps its default, or,
// when `required`, the field is reported missing.
template <typename T>
Status Field(const json& j, const std::string& path, const char* key, T* out,
             bool required = false) {
  const std::string at = path.empty() ? key : path + "." + key;
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return required ? Status::InvalidArgument(at + " is missing") : Status::Ok();
  return Read(*it, at, out);
}
constexpr bool kRequired = true;

Status Object(const json& j, const std::string& path) {
  return j.is_object() ? Status::Ok() : WrongType(path, j, "an object");
}

Status Read(const json& j, const std::string& path, WorkerError* e) {
  KF_RETURN_IF_ERROR(Object(j, path));
  KF_RETURN_IF_ERROR(Field(j, path, "stage", &e->stage));
  KF_RETURN_IF_ERROR(Field(j, path, "message", &e->message));
  return Field(j, path, "build_failure", &e->build_failure);
}

Status Read(const json& j, const std::string& path, WorkerCheck* c) {
  KF_RETURN_IF_ERROR(Object(j, path));
  KF_RETURN_IF_ERROR(Field(j, path, "set", &c->set));
  KF_RETURN_IF_ERROR(Field(j, path, "ms_a", &c->ms_a));
  KF_RETURN_IF_ERROR(Field(j, path, "ms_b", &c->ms_b));
  KF_RETURN_IF_ERROR(Field(j, path, "overrun", &c->overrun));
  KF_RETURN_IF_ERROR(Field(j, path, "input_hashes_before", &c->input_hashes_before));
  return Field(j, path, "input_hashes_after", &c->input_hashes_after);
}

Status Read(const json& j, const std::string& path, TimedSample* s) {
  KF_RETURN_IF_ERROR(Object(j, path));
  KF_RETURN_IF_ERROR(Field(j, path, "run", &s->run, kRequired));
  KF_RETURN_IF_ERROR(Field(j, path, "set", &s->set, kRequired));
  KF_RETURN_IF_ERROR(Field(j, path, "seed", &s->seed));
  KF_RETURN_IF_ERROR(Field(j, path, "magnitude", &s->magnitude));
  return Field(j, path, "files", &s->files, kRequired);
}

Status Read(const json& j, const std::string& path, Calibration* c) {
  KF_RETURN_IF_ERROR(Object(j, path));
  KF_RETURN_IF_ERROR(Field(j, path, "runs", &c->runs));
  KF_RETURN_IF_ERROR(Field(j, path, "null_runs", &c->null_runs));
  KF_RETURN_IF_ERROR(Field(j, path, "overhead_ms", &c->overhead_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "overhead_mad_ms", &c->overhead_mad_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "collect_ms", &c->collect_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "copy_ms", &c->copy_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "prepare_ms", &c->prepare_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "wall_ms", &c->wall_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "null_host_ms", &c->null_host_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "null_device_ms", &c->null_device_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "null_enqueue_ms", &c->null_enqueue_ms));
  return Field(j, path, "device_ms", &c->device_ms);
}

Status Read(const json& j, const std::string& path, WorkerTiming* t) {
  KF_RETURN_IF_ERROR(Object(j, path));
  KF_RETURN_IF_ERROR(Field(j, path, "device_ms", &t->device_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "host_ms", &t->host_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "wall_ms", &t->wall_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "collect_ms", &t->collect_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "copy_ms", &t->copy_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "prepare_ms", &t->prepare_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "scan_ms", &t->scan_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "step_ms", &t->step_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "enqueue_ms", &t->enqueue_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "sets_used", &t->sets_used));
  KF_RETURN_IF_ERROR(Field(j, path, "seeds", &t->seeds));
  KF_RETURN_IF_ERROR(Field(j, path, "magnitudes", &t->magnitudes));
  KF_RETURN_IF_ERROR(Field(j, path, "fresh_inputs", &t->fresh_inputs));
  KF_RETURN_IF_ERROR(Field(j, path, "issues", &t->issues));
  KF_RETURN_IF_ERROR(Field(j, path, "samples", &t->samples));
  KF_RETURN_IF_ERROR(Field(j, path, "threads_before", &t->threads_before));
  KF_RETURN_IF_ERROR(Field(j, path, "threads_after", &t->threads_after));
  KF_RETURN_IF_ERROR(Field(j, path, "overhead_ms", &t->overhead_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "overhead_mad_ms", &t->overhead_mad_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "collect_overhead_ms", &t->collect_overhead_ms));
  KF_RETURN_IF_ERROR(Field(j, path, "lock_wait_s", &t->lock_wait_s));
  KF_RETURN_IF_ERROR(Field(j, path, "calibration", &t->calibration));
  KF_RETURN_IF_ERROR(Field(j, path, "note", &t->note));
  KF_RETURN_IF_ERROR(Field(j, path, "input_hashes_before", &t->input_hashes_before));
  return Field(j, path, "input_hashes_after", &t->input_hashes_after);
}

Status Read(const json& j, const std::string& path, WorkerPeaks* p) {
  KF_RETURN_IF_ERROR(Object(j, path));
  KF_RETURN_IF_ERROR(Field(j, path, "bandwidth_gbs", &p->bandwidth_gbs));
  KF_RETURN_IF_ERROR(Field(j, path, "fp32_gflops", &p->fp32_gflops));
  return Field(j, path, "detail", &p->detail);
}

Status Read(const json& j, const std::string& path, ReferenceInput* in) {
  KF_RETURN_IF_ERROR(Object(j, path));
  KF_RETURN_IF_ERROR(Field(j, path, "name", &in->name, kRequired));
  KF_RETURN_IF_ERROR(Field(j, path, "kind", &in->kind));
  KF_RETURN_IF_ERROR(Field(j, path, "dtype", &in->dtype, kRequired));
  KF_RETURN_IF_ERROR(Field(j, path, "dims", &in->dims, kRequired));
  KF_RETURN_IF_ERROR(Field(j, path, "hash", &in->hash, kRequired));
  return Field(j, path, "file", &in->file);
}

Status Read(const json& j, const std::string& path, ReferenceOutput* out) {
  KF_RETURN_IF_ERROR(Object(j, path));
  KF_RETURN_IF_ERROR(Field(j, path, "name", &out->name, kRequired));
  KF_RETURN_IF_ERROR(Field(j, path, "dtype", &out->dtype, kRequired));
  KF_RETURN_IF_ERROR(Field(j, path, "reference_dtype", &out->reference_dtype, kRequired));
  KF_RETURN_IF_ERROR(Field(j, path, "dims", &out->dims, kRequired));
  return Field(j, path, "file", &out->file, kRequired);
}

Status Read(const json& j, const std::string& path, ReferenceSet* s) {
  KF_RETURN_IF_ERROR(Object(j, path));
  KF_RETURN_IF_ERROR(Field(j, path, "set", &s->set));
  KF_RETURN_IF_ERROR(Field(j, path, "inputs", &s->inputs));
  KF_RETURN_IF_ERROR(Field(j, path, "outputs", &s->outputs));
  KF_RETURN_IF_ERROR(Field(j, path, "flops", &s->flops));
  KF_RETURN_IF_ERROR(Field(j, path, "reference_precision", &s->reference_precision));
  KF_RETURN_IF_ERROR(Field(j, path, "constants", &s->constants));
  KF_RETURN_IF_ERROR(Field(j, path, "init_inputs", &s->init_inputs));
  return Field(j, path, "scalars", &s->scalars);
}

Status Read(const json& j, WorkerReport* r) {
  const std::string top;
  KF_RETURN_IF_ERROR(Object(j, "the report"));
  KF_RETURN_IF_ERROR(Field(j, top, "done", &r->done));
  KF_RETURN_IF_ERROR(Field(j, top, "error", &r->error));
  KF_RETURN_IF_ERROR(Field(j, top, "files", &r->files));
  KF_RETURN_IF_ERROR(Field(j, top, "fingerprint", &r->fingerprint));
  KF_RETURN_IF_ERROR(Field(j, top, "phases_ms", &r->phases_ms));
  KF_RETURN_IF_ERROR(Field(j, top, "precision", &r->precision));
  KF_RETURN_IF_ERROR(Field(j, top, "kernels", &r->kernels));
  KF_RETURN_IF_ERROR(Field(j, top, "llc_bytes", &r->llc_bytes));
  KF_RETURN_IF_ERROR(Field(j, top, "threads_after_first_run", &r->threads_after_first_run));
  KF_RETURN_IF_ERROR(Field(j, top, "threads_after_checks", &r->threads_after_checks));
  KF_RETURN_IF_ERROR(Field(j, top, "checks", &r->checks));
  KF_RETURN_IF_ERROR(Field(j, top, "timing", &r->timing));
  KF_RETURN_IF_ERROR(Field(j, top, "input_hashes", &r->input_hashes));
  KF_RETURN_IF_ERROR(Field(j, top, "calibration", &r->calibration));
  KF_RETURN_IF_ERROR(Field(j, top, "peaks", &r->peaks));
  KF_RETURN_IF_ERROR(Field(j, top, "sets", &r->sets));
  KF_RETURN_IF_ERROR(Field(j, top, "parameters", &r->parameters));
  KF_RETURN_IF_ERROR(Field(j, top, "first_call_seconds", &r->first_call_seconds));
  KF_RETURN_IF_ERROR(Field(j, top, "threads_before_load", &r->threads_before_load));
  KF_RETURN_IF_ERROR(Field(j, top, "stage_seconds", &r->stage_seconds));
  KF_RETURN_IF_ERROR(Field(j, top, "child_seconds", &r->child_seconds));
  return Field(j, top, "cancelled", &r->cancelled);
}

}  // namespace

Result<WorkerReport> ParseWorkerReport(const json& report) {
  WorkerReport r;
  KF_RETURN_IF_ERROR(Read(report, &r));
  return r;
}

std::vector<int> TimingSets(const WorkerTiming& timing, size_t runs) {
  return timing.sets_used.size() == runs ? timing.sets_used : std::vector<int>{};
}

namespace {
constexpr double kBoundDeviceShare = 0.05;  // of the device median
constexpr double kBoundDeviations = 3;      // of overhead_mad_ms
}  // namespace

double SupervisorBound(double wall_median_ms, double overhead_ms, double device_median_ms, double overhead_mad_ms) {
  return wall_median_ms - overhead_ms - (kBoundDeviceShare * device_median_ms + kBoundDeviations * overhead_mad_ms);
}

std::string SupervisorBoundRule() {
  return "median of device_ms (the child's timer), at least the supervisor's wall_ms median less overhead_ms, " +
         std::to_string(static_cast<int>(kBoundDeviceShare * 100)) + "% of the device median and " +
         std::to_string(static_cast<int>(kBoundDeviations)) + " overhead_mad_ms (TimingFromWorker)";
}

double QueuedHostExcess(const std::vector<double>& host_ms, const std::vector<double>& device_ms,
                        const std::vector<double>& enqueue_ms, double queue_ms) {
  if (host_ms.empty() || host_ms.size() != device_ms.size() || host_ms.size() != enqueue_ms.size()) return 0;
  std::vector<double> beyond;
  for (size_t i = 0; i < host_ms.size(); ++i)
    beyond.push_back(host_ms[i] - device_ms[i] - std::max(0.0, enqueue_ms[i] - queue_ms));
  return Median(beyond);
}

TimingStats TimingFromWorker(const WorkerTiming& timing) {
  const std::vector<int> sets = TimingSets(timing, timing.device_ms.size());
  TimingStats t = ComputeStats(timing.device_ms, timing.host_ms, sets);
  t.device_median_ms = t.median_ms;
  if (timing.wall_ms.empty()) return t;
  t.wall_median_ms = SetMedian(timing.wall_ms, sets);
  t.overhead_ms = timing.overhead_ms.value_or(0.0);
  const double bound = SupervisorBound(t.wall_median_ms, t.overhead_ms, t.median_ms, timing.overhead_mad_ms);
  if (bound > t.median_ms) {
    t.median_ms = bound;
    t.wall_bounded = true;
  }
  return t;
}

}  // namespace kforge
