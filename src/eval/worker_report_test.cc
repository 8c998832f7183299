// A worker's report, typed (eval/worker_report.h): both workers' result.json read into one
// struct, and a report of the wrong shape an error naming its field, never an exception.
#include "eval/worker_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/files.h"
#include "eval/worker_client.h"

namespace kforge {
namespace {

using nlohmann::json;

// What kforge-worker's supervisor writes for a timed job with two check trials
// (src/worker/worker.cc, Supervisor::result_).
json NativeReport() {
  return json::parse(R"({
    "fingerprint": {"name": "cpu", "threads": 2}, "llc_bytes": 33554432,
    "input_hashes": [["a1", "b1"], ["a2", "b2"]],
    "calibration": {"overhead_ms": 0.05, "overhead_mad_ms": 0.01, "collect_ms": 0.02, "runs": 12},
    "phases_ms": {"open": 1.5, "load": 2.0, "timing_prepare": 3.0},
    "checks": [
      {"set": 0, "ms_a": 0.5, "ms_b": 0.4, "input_hashes_before": ["a1", "b1"], "input_hashes_after": ["a1", "b1"]},
      {"set": 1, "ms_a": 0.6, "ms_b": 0.5, "overrun": "wrote past the end of output 'y'",
       "input_hashes_before": ["a2", "b2"], "input_hashes_after": ["a2", "b2"]}],
    "threads_after_first_run": 3, "threads_after_checks": 3,
    "kernels": {"source": "none", "available": false},
    "timing": {"device_ms": [0.5, 0.6, 0.5], "host_ms": [0.6, 0.7, 0.6], "wall_ms": [0.6, 0.7, 0.6],
               "collect_ms": [0.02, 0.03, 0.02], "sets_used": [0, 1, 0],
               "seeds": [1, 18446744073709551615, 3], "fresh_inputs": true, "issues": [],
               "samples": [{"run": 1, "set": 1, "seed": 18446744073709551615, "files": {"y": "timed_1_y.bin"}}],
               "threads_before": 3, "threads_after": 3,
               "overhead_ms": 0.05, "overhead_mad_ms": 0.01, "collect_overhead_ms": 0.02},
    "precision": {"fast_math_options": []},
    "files": {"out_0_a_y.bin": "00ff"}, "done": true})");
}

// What the Python worker's supervisor writes for a timed candidate job
// (python/kforge_pyworker.py, Results.data); a job of inputs that carry no generators.
json PythonReport() {
  return json::parse(R"({
    "files": {"out_0_a_y.bin": "00ff"}, "child_seconds": {"import torch": 1.25},
    "fingerprint": {"device": "cpu"}, "llc_bytes": 33554432, "threads_before_load": 4,
    "parameters": {"count": 0}, "first_call_seconds": 0.5,
    "checks": [{"set": 0, "ms_a": 0.5, "ms_b": 0.5, "input_hashes_before": ["same"], "input_hashes_after": ["same"]}],
    "kernels": null, "threads_after_first_run": 5, "threads_after_checks": 5,
    "precision": {"state": {"tf32": false}, "default": {"tf32": false}},
    "timing": {"overhead_ms": 0.1,
               "calibration": {"null_runs": 20, "overhead_ms": 0.1, "wall_ms": 0.2, "device_ms": 0.1,
                               "prepare_ms": 0.3, "collect_ms": 0.05, "copy_ms": 0.7,
                               "null_host_ms": [0.09, 0.1], "null_device_ms": [0.01, 0.02], "null_enqueue_ms": [0.03, 0.04]},
               "fresh_inputs": false, "device_ms": [1.0, 1.1], "host_ms": [1.0, 1.1], "wall_ms": [1.2, 1.3],
               "prepare_ms": [0.3, 0.3], "collect_ms": [0.05, 0.06], "copy_ms": [0.8, 0.9], "enqueue_ms": [0.04, 0.05],
               "sets_used": [0, 0], "seeds": [null, null],
               "magnitudes": [1.0, 1.0], "issues": [], "threads_before": 5, "threads_after": 5,
               "note": "timed runs rotate over the check trials' inputs",
               "input_hashes_before": {"0": ["same"]}, "input_hashes_after": {"0": ["same"]},
               "samples": [{"run": 0, "seed": null, "set": 0, "magnitude": 1.0, "files": {"y": "timed_0_y.bin"}}]},
    "stage_seconds": {"start": 0.1, "timed runs": 0.4}, "done": true})");
}

// A Python reference job's report: one described set.
json PythonReferenceReport() {
  return json::parse(R"({
    "files": {"ref_0_out.bin": "00ff"}, "fingerprint": {"device": "cpu"}, "llc_bytes": 1024,
    "sets": [{"set": 0, "constants": {"batch_size": 16}, "init_inputs": ["3"],
              "scalars": [{"name": "dim", "value": 1}],
              "inputs": [{"name": "x", "kind": "input", "dtype": "float32", "dims": [16, 3], "hash": "h1",
                          "file": "in_0_x.bin"}],
              "flops": 96, "reference_precision": "float64",
              "outputs": [{"name": "out", "dtype": "float32", "dims": [16, 3], "file": "ref_0_out.bin",
                           "reference_dtype": "float64"}]}],
    "stage_seconds": {"reference set 0": 0.2}, "done": true})");
}

// The Status of parsing `report` with `value` at `path` (object keys, then array indices).
Status ParseWith(json report, const json::json_pointer& path, const json& value) {
  report[path] = value;
  Result<WorkerReport> r = ParseWorkerReport(report);
  return r.ok() ? Status::Ok() : r.status();
}

TEST(WorkerReportTest, GivenAFullNativeReportItParses) {
  Result<WorkerReport> r = ParseWorkerReport(NativeReport());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->done);
  EXPECT_FALSE(r->error);
  EXPECT_EQ(r->files.at("out_0_a_y.bin"), "00ff");
  EXPECT_EQ(r->fingerprint["name"], "cpu");
  EXPECT_EQ(r->llc_bytes, 33554432);
  ASSERT_EQ(r->input_hashes.size(), 2u);
  EXPECT_EQ(r->input_hashes[1][0], "a2");
  ASSERT_TRUE(r->calibration);
  EXPECT_EQ(r->calibration->runs, 12);
  ASSERT_EQ(r->checks.size(), 2u);
  EXPECT_FALSE(r->checks[0].overrun);
  EXPECT_EQ(*r->checks[1].overrun, "wrote past the end of output 'y'");
  EXPECT_EQ(r->checks[1].input_hashes_after, r->checks[1].input_hashes_before);
  EXPECT_DOUBLE_EQ(r->checks[1].ms_a, 0.6);
  EXPECT_EQ(r->threads_after_checks, 3);
  ASSERT_TRUE(r->timing);
  const WorkerTiming& t = *r->timing;
  EXPECT_EQ(t.device_ms.size(), 3u);
  EXPECT_EQ(t.sets_used, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(*t.seeds[1], 18446744073709551615u);  // kforge-worker's seeds span 64 bits
  EXPECT_TRUE(t.fresh_inputs);
  ASSERT_EQ(t.samples.size(), 1u);
  EXPECT_EQ(t.samples[0].run, 1);
  EXPECT_EQ(t.samples[0].files.at("y"), "timed_1_y.bin");
  EXPECT_DOUBLE_EQ(*t.overhead_ms, 0.05);
  EXPECT_DOUBLE_EQ(t.collect_overhead_ms, 0.02);
  EXPECT_FALSE(t.input_hashes_after);
  EXPECT_TRUE(r->kernels.is_object());
  EXPECT_TRUE(r->parameters.is_null());
}

TEST(WorkerReportTest, GivenAFullPythonReportItParses) {
  Result<WorkerReport> r = ParseWorkerReport(PythonReport());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->done);
  EXPECT_EQ(r->threads_before_load, 4);
  EXPECT_DOUBLE_EQ(r->first_call_seconds, 0.5);
  EXPECT_EQ(r->parameters["count"], 0);
  EXPECT_TRUE(r->kernels.is_null());
  EXPECT_DOUBLE_EQ(r->child_seconds.at("import torch"), 1.25);
  EXPECT_DOUBLE_EQ(r->stage_seconds.at("timed runs"), 0.4);
  ASSERT_TRUE(r->timing);
  const WorkerTiming& t = *r->timing;
  EXPECT_EQ(t.prepare_ms.size(), 2u);
  EXPECT_EQ(t.enqueue_ms, (std::vector<double>{0.04, 0.05}));
  EXPECT_EQ(t.copy_ms, (std::vector<double>{0.8, 0.9}));
  ASSERT_EQ(t.seeds.size(), 2u);
  EXPECT_FALSE(t.seeds[0]);  // no fresh inputs: no seed
  ASSERT_TRUE(t.calibration);
  EXPECT_EQ(t.calibration->null_runs, 20);
  EXPECT_DOUBLE_EQ(t.calibration->prepare_ms, 0.3);
  EXPECT_DOUBLE_EQ(t.calibration->copy_ms, 0.7);
  EXPECT_EQ(t.calibration->null_host_ms, (std::vector<double>{0.09, 0.1}));
  EXPECT_EQ(t.calibration->null_device_ms, (std::vector<double>{0.01, 0.02}));
  EXPECT_EQ(t.calibration->null_enqueue_ms, (std::vector<double>{0.03, 0.04}));
  EXPECT_EQ(*t.note, "timed runs rotate over the check trials' inputs");
  ASSERT_TRUE(t.input_hashes_after);
  EXPECT_EQ(t.input_hashes_after->at("0"), std::vector<std::string>{"same"});
  ASSERT_EQ(t.samples.size(), 1u);
  EXPECT_FALSE(t.samples[0].seed);
  EXPECT_DOUBLE_EQ(*t.samples[0].magnitude, 1.0);

  Result<WorkerReport> ref = ParseWorkerReport(PythonReferenceReport());
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  ASSERT_EQ(ref->sets.size(), 1u);
  const ReferenceSet& s = ref->sets[0];
  EXPECT_EQ(s.constants["batch_size"], 16);
  EXPECT_DOUBLE_EQ(s.flops, 96);
  EXPECT_EQ(s.reference_precision, "float64");
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].dims, (std::vector<int64_t>{16, 3}));
  EXPECT_EQ(*s.inputs[0].file, "in_0_x.bin");
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0].reference_dtype, "float64");
}

TEST(WorkerReportTest, GivenAnEmptyReportEveryFieldKeepsItsDefault) {
  Result<WorkerReport> r = ParseWorkerReport(json::object());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->done);
  EXPECT_FALSE(r->timing);
  EXPECT_TRUE(r->checks.empty());
  EXPECT_TRUE(r->fingerprint.is_object());
}

TEST(WorkerReportTest, GivenAFieldOfTheWrongTypeTheStatusNamesIt) {
  struct Case {
    json report;
    const char* path;
    json value;
    const char* named;
  };
  for (const Case& c : std::vector<Case>{
           {NativeReport(), "/timing/device_ms", "fast",
            "timing.device_ms is a string, expected an array"},
           {NativeReport(), "/timing/device_ms/1", "fast",
            "timing.device_ms[1] is a string, expected a number"},
           {NativeReport(), "/checks", "not a list", "checks is a string, expected an array"},
           {NativeReport(), "/timing/samples/0/seed", -5,
            "timing.samples[0].seed is -5, expected a non-negative integer"},
           {NativeReport(), "/timing/samples/0/seed", "7", "timing.samples[0].seed is a string"},
           {NativeReport(),
            "/error",
            {{"stage", "load"}, {"message", 42}},
            "error.message is 42, expected a string"},
           {NativeReport(), "/checks/1/set", 1.5, "checks[1].set is 1.5, expected an integer"},
           {NativeReport(), "/done", "yes", "done is a string, expected true or false"},
           {PythonReport(), "/timing/input_hashes_after/0", "same",
            "timing.input_hashes_after.0 is a string, expected an array"},
           {PythonReport(), "/stage_seconds/start", "slow",
            "stage_seconds.start is a string, expected a number"},
           {PythonReferenceReport(),
            "/sets/0/outputs/0/dims",
            {16, "3"},
            "sets[0].outputs[0].dims[1] is a string, expected an integer"},
       }) {
    Status s = ParseWith(c.report, json::json_pointer(c.path), c.value);
    EXPECT_FALSE(s.ok()) << c.path;
    EXPECT_NE(s.message().find(c.named), std::string::npos) << c.path << ": " << s.message();
  }
}

TEST(WorkerReportTest, GivenARequiredFieldMissingTheStatusNamesIt) {
  json report = NativeReport();
  report["timing"]["samples"][0].erase("files");
  Result<WorkerReport> r = ParseWorkerReport(report);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("timing.samples[0].files is missing"), std::string::npos)
      << r.status().message();
  r = ParseWorkerReport(json::array());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the report is an array, expected an object"),
            std::string::npos)
      << r.status().message();
}

TEST(WorkerReportTest, GivenTimingWithSetsPerRunTheyAreUsedElsePooled) {
  WorkerTiming t;
  t.device_ms = {1, 2, 3};
  t.sets_used = {0, 1, 0};
  EXPECT_EQ(TimingSets(t, 3), t.sets_used);
  EXPECT_TRUE(TimingSets(t, 4).empty());
}

// The judged median is the device median unless the supervisor's clock says the call took
// longer than that by more than the tolerance (5% of the device median, 3 null-run deviations).
TEST(WorkerReportTest, GivenAWallClockFarAboveTheDeviceTimesTheMedianIsTheSupervisorsBound) {
  WorkerTiming t;
  t.device_ms = {1.0, 1.0, 1.0};
  t.wall_ms = {1.2, 1.2, 1.2};
  t.overhead_ms = 0.1;
  t.overhead_mad_ms = 0.01;
  // 1.2 - 0.1 - (0.05 + 0.03) = 1.02: above the device median.
  EXPECT_NEAR(SupervisorBound(1.2, 0.1, 1.0, 0.01), 1.02, 1e-12);
  TimingStats s = TimingFromWorker(t);
  EXPECT_TRUE(s.wall_bounded);
  EXPECT_NEAR(s.median_ms, 1.02, 1e-12);
  EXPECT_NEAR(s.device_median_ms, 1.0, 1e-12);
  t.wall_ms = {1.15, 1.15, 1.15};  // 0.97: within the tolerance, the device median stands
  s = TimingFromWorker(t);
  EXPECT_FALSE(s.wall_bounded);
  EXPECT_NEAR(s.median_ms, 1.0, 1e-12);
  EXPECT_NE(SupervisorBoundRule().find("5% of the device median and 3 overhead_mad_ms"), std::string::npos);
}

// A confirmed result.json (its hash printed by the supervisor) whose content does not parse.
TEST(WorkerReportTest, GivenAMalformedReportReadWorkerRunMakesAnUnfinishedRunWithAResultError) {
  Result<std::filesystem::path> dir = MakeTempDir("report-test");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  json report = NativeReport();
  report["timing"]["device_ms"] = "fast";
  const std::string text = report.dump(1);
  ASSERT_TRUE(WriteFileAtomic(*dir / "result.json", text).ok());
  ProcessResult process;
  process.end = ProcessResult::End::kExited;
  process.exit_code = 0;
  process.out = "kforge-result " + Sha256Hex(text) + "\n";
  WorkerRun run = ReadWorkerRun(process, *dir);
  EXPECT_TRUE(run.confirmed);
  EXPECT_TRUE(run.malformed);
  EXPECT_FALSE(run.finished());
  ASSERT_TRUE(run.report.error);
  EXPECT_EQ(run.report.error->stage, "result");
  EXPECT_NE(run.report.error->message.find("the worker's report is malformed: timing.device_ms"),
            std::string::npos)
      << run.report.error->message;
  EXPECT_TRUE(run.report.checks.empty()) << "nothing of a malformed report is kept";

  // The same report, well-formed, is a finished run.
  const std::string good = NativeReport().dump(1);
  ASSERT_TRUE(WriteFileAtomic(*dir / "result.json", good).ok());
  process.out = "kforge-result " + Sha256Hex(good) + "\n";
  WorkerRun ok = ReadWorkerRun(process, *dir);
  EXPECT_FALSE(ok.malformed);
  EXPECT_TRUE(ok.finished());
  EXPECT_EQ(ok.report.checks.size(), 2u);

  // result.json replaced by a link to an endless device (the job folder is the sandbox's): not
  // followed, an unfinished run that says why.
  std::filesystem::remove(*dir / "result.json");
  std::filesystem::create_symlink("/dev/zero", *dir / "result.json");
  WorkerRun linked = ReadWorkerRun(process, *dir);
  EXPECT_FALSE(linked.finished());
  ASSERT_TRUE(linked.report.error);
  EXPECT_NE(linked.report.error->message.find("symbolic link"), std::string::npos) << linked.report.error->message;
  Cleanup(ok);
}

// Queued calls (a head start of 0.2 ms): an honest call's host time is its device time and the
// synchronize's wake-up; a call whose work ran on a stream of its own past the end event keeps
// that work in its host time; launches slower than the head start are not counted against it.
TEST(QueuedHostExcessTest, GivenWorkPastTheEndEventItIsTheExcessAndSlowLaunchesAreNot) {
  const double queue = 0.2;
  EXPECT_NEAR(QueuedHostExcess({0.031, 0.029, 0.030}, {0.010, 0.011, 0.010}, {0.05, 0.04, 0.05}, queue), 0.020, 1e-9);
  // Side-stream work: 0.1 ms the events do not enclose.
  EXPECT_NEAR(QueuedHostExcess({0.125, 0.120, 0.130}, {0.004, 0.004, 0.004}, {0.06, 0.05, 0.06}, queue), 0.121, 1e-9);
  // Launches that took 0.5 ms, 0.3 past the head start: the device waited for them, not hidden.
  EXPECT_NEAR(QueuedHostExcess({0.33, 0.34, 0.32}, {0.01, 0.01, 0.01}, {0.5, 0.5, 0.5}, queue), 0.02, 1e-9);
  EXPECT_EQ(QueuedHostExcess({0.3}, {0.01, 0.01}, {0.05}, queue), 0.0);  // lengths differ
  EXPECT_EQ(QueuedHostExcess({}, {}, {}, queue), 0.0);
}

}  // namespace
}  // namespace kforge
