#include "worker/protocol.h"

#include <cstring>

namespace kforge {

using nlohmann::json;

const char* DistName(Distribution::Kind k) {
  switch (k) {
    case Distribution::Kind::kNormal: return "normal";
    case Distribution::Kind::kUniform: return "uniform";
    case Distribution::Kind::kIntegers: return "integers";
  }
  return "normal";
}

namespace {

json TensorToJson(const TensorFile& t) {
  json j = {{"name", t.shape.name}, {"dtype", DTypeName(t.shape.dtype)},
            {"dims", t.shape.dims}, {"file", t.file}};
  if (t.gen)
    j["gen"] = {{"kind", DistName(t.gen->dist.kind)}, {"a", t.gen->dist.a}, {"b", t.gen->dist.b},
                {"positive", t.gen->dist.positive}, {"key", t.gen->key}};
  if (t.gen && t.gen->dtype) j["gen"]["dtype"] = DTypeName(*t.gen->dtype);
  if (t.draw_seed) j["draw_seed"] = *t.draw_seed;
  return j;
}

Result<TensorFile> TensorFromJson(const json& j) {
  TensorFile t;
  t.shape.name = j.at("name").get<std::string>();
  KF_ASSIGN_OR_RETURN(t.shape.dtype, ParseDType(j.at("dtype").get<std::string>()));
  t.shape.dims = j.at("dims").get<std::vector<int64_t>>();
  t.file = j.value("file", "");
  if (j.contains("gen")) {
    const json& g = j["gen"];
    InputGenerator gen;
    std::string kind = g.at("kind").get<std::string>();
    if (kind == "normal") gen.dist.kind = Distribution::Kind::kNormal;
    else if (kind == "uniform") gen.dist.kind = Distribution::Kind::kUniform;
    else if (kind == "integers") gen.dist.kind = Distribution::Kind::kIntegers;
    else return Status::InvalidArgument("unknown input distribution '" + kind + "'");
    gen.dist.a = g.at("a").get<double>();
    gen.dist.b = g.at("b").get<double>();
    gen.dist.positive = g.value("positive", false);
    gen.key = g.at("key").get<std::string>();
    if (g.contains("dtype")) {
      KF_ASSIGN_OR_RETURN(DType d, ParseDType(g["dtype"].get<std::string>()));
      gen.dtype = d;
    }
    t.gen = gen;
  }
  if (j.contains("draw_seed")) {
    if (!t.gen) return Status::InvalidArgument("input '" + t.shape.name + "' has a draw_seed but no generator");
    t.draw_seed = j["draw_seed"].get<uint64_t>();
  }
  return t;
}

json SetToJson(const InputSet& s) {
  json attrs = json::array(), ins = json::array(), outs = json::array();
  for (const LaunchAttr& a : s.attrs) attrs.push_back({{"name", a.name}, {"i", a.i}, {"f", a.f}});
  for (const TensorFile& t : s.inputs) ins.push_back(TensorToJson(t));
  for (const TensorFile& t : s.outputs) outs.push_back(TensorToJson(t));
  return {{"magnitude", s.magnitude}, {"attrs", attrs}, {"inputs", ins}, {"outputs", outs}};
}

Result<InputSet> SetFromJson(const json& j) {
  InputSet s;
  s.magnitude = j.value("magnitude", 1.0);
  for (const json& a : j.at("attrs"))
    s.attrs.push_back({a.at("name").get<std::string>(), a.at("i").get<int64_t>(), a.at("f").get<double>()});
  for (const json& t : j.at("inputs")) {
    KF_ASSIGN_OR_RETURN(TensorFile f, TensorFromJson(t));
    s.inputs.push_back(std::move(f));
  }
  for (const json& t : j.at("outputs")) {
    KF_ASSIGN_OR_RETURN(TensorFile f, TensorFromJson(t));
    s.outputs.push_back(std::move(f));
  }
  return s;
}

}  // namespace

json JobToJson(const Job& job) {
  json sets = json::array();
  for (const InputSet& s : job.sets) sets.push_back(SetToJson(s));
  json j = {{"backend", job.backend}, {"device", job.device}, {"library", job.library},
            {"entry", job.entry}, {"program_source_file", job.program_source_file},
            {"sets", sets}, {"checks", job.checks}, {"check_twice", job.check_twice}, {"peaks", job.peaks},
            {"record_kernels", job.record_kernels}};
  if (!job.lock_file.empty()) j["lock_file"] = job.lock_file;
  if (job.timing) j["timing"] = TimingPlanToJson(*job.timing);
  return j;
}

json TimingPlanToJson(const TimingPlan& t) {
  return {{"sets", t.sets}, {"warmup_runs", t.warmup_runs}, {"warmup_ms", t.warmup_ms},
          {"min_runs", t.min_runs}, {"max_runs", t.max_runs}, {"budget_ms", t.budget_ms},
          {"cv_target", t.cv_target}, {"precision_target", t.precision_target}, {"flush", t.flush}, {"fresh_inputs", t.fresh_inputs},
          {"timed_checks", t.timed_checks}, {"calibration_runs", t.calibration_runs},
          {"reference_finite", t.reference_finite}, {"degenerate", t.degenerate}, {"queue_ms", t.queue_ms}};
}

Result<Job> JobFromJson(const json& j) {
  try {
    Job job;
    job.backend = j.at("backend").get<std::string>();
    job.device = j.value("device", 0);
    job.library = j.value("library", "");
    job.entry = j.value("entry", "");
    job.program_source_file = j.value("program_source_file", "");
    job.peaks = j.value("peaks", false);
    for (const json& s : j.value("sets", json::array())) {
      KF_ASSIGN_OR_RETURN(InputSet set, SetFromJson(s));
      job.sets.push_back(std::move(set));
    }
    job.checks = j.value("checks", std::vector<int>{});
    job.check_twice = j.value("check_twice", true);
    job.record_kernels = j.value("record_kernels", true);
    job.lock_file = j.value("lock_file", "");
    if (j.contains("timing")) {
      const json& t = j["timing"];
      TimingPlan p;
      p.sets = t.at("sets").get<std::vector<int>>();
      p.warmup_runs = t.value("warmup_runs", p.warmup_runs);
      p.warmup_ms = t.value("warmup_ms", p.warmup_ms);
      p.min_runs = t.value("min_runs", p.min_runs);
      p.max_runs = t.value("max_runs", p.max_runs);
      p.budget_ms = t.value("budget_ms", p.budget_ms);
      p.cv_target = t.value("cv_target", p.cv_target);
      p.precision_target = t.value("precision_target", p.precision_target);
      p.flush = t.value("flush", p.flush);
      p.fresh_inputs = t.value("fresh_inputs", p.fresh_inputs);
      p.timed_checks = t.value("timed_checks", p.timed_checks);
      p.calibration_runs = t.value("calibration_runs", p.calibration_runs);
      p.reference_finite = t.value("reference_finite", p.reference_finite);
      p.degenerate = t.value("degenerate", p.degenerate);
      p.queue_ms = t.value("queue_ms", p.queue_ms);
      if (!(p.queue_ms >= 0 && p.queue_ms <= 10)) return Status::InvalidArgument("timing.queue_ms must be 0 to 10 ms");
      job.timing = p;
    }
    for (int s : job.checks)
      if (s < 0 || s >= static_cast<int>(job.sets.size())) return Status::InvalidArgument("check set out of range");
    if (job.timing)
      for (int s : job.timing->sets)
        if (s < 0 || s >= static_cast<int>(job.sets.size())) return Status::InvalidArgument("timing set out of range");
    return job;
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("malformed job: ") + e.what());
  }
}

std::string CheckOutputFile(int set, char poison, const std::string& tensor) {
  return "out_" + std::to_string(set) + "_" + poison + "_" + tensor + ".bin";
}

std::string TimedOutputFile(int run, const std::string& tensor) {
  return "out_timed_" + std::to_string(run) + "_" + tensor + ".bin";
}

size_t PoisonPattern(DType t, int which, unsigned char out[8]) {
  // Quiet NaNs with distinct payloads and signs; integer sentinels unlikely as results.
  static const uint32_t kF32[2] = {0x7fc0dead, 0xffc0beef};
  static const uint64_t kF64[2] = {0x7ff80000dead0001ull, 0xfff80000beef0002ull};
  static const uint16_t kF16[2] = {0x7e01, 0xfe02};
  static const uint16_t kBF16[2] = {0x7fc1, 0xffc2};
  static const int32_t kI32[2] = {-0x7ead1234, 0x5eed5eed};
  static const int64_t kI64[2] = {-0x7ead12345678ll, 0x5eed5eed5eedll};
  switch (t) {
    case DType::kFloat32: std::memcpy(out, &kF32[which], 4); return 4;
    case DType::kFloat64: std::memcpy(out, &kF64[which], 8); return 8;
    case DType::kFloat16: std::memcpy(out, &kF16[which], 2); return 2;
    case DType::kBFloat16: std::memcpy(out, &kBF16[which], 2); return 2;
    case DType::kInt32: std::memcpy(out, &kI32[which], 4); return 4;
    case DType::kInt64: std::memcpy(out, &kI64[which], 8); return 8;
  }
  return 0;
}

}  // namespace kforge
