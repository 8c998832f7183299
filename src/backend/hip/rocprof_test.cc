// Specifications of the rocprof parsers, on fixture files written by hand from rocprof's
// documented formats (testdata/rocprof/README.md): not captured from a real run.
#include "backend/hip/rocprof.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kforge {
namespace {

const std::string kData = KFORGE_ROCPROF_TESTDATA;

const nlohmann::json& Kernel(const nlohmann::json& p, size_t i) { return p["kernels"].at(i); }

TEST(RocprofTest, GivenARocprofV1DispatchCsvItAveragesEachKernelsDispatches) {
  nlohmann::json p = ParseRocprofFolder(kData + "/v1");
  ASSERT_FALSE(p.contains("error")) << p.dump(1);
  EXPECT_EQ(p["source"], "results.csv");
  EXPECT_EQ(p["tool"], "rocprof");
  ASSERT_EQ(p["kernels"].size(), 2u);
  const nlohmann::json& softmax = Kernel(p, 0);
  EXPECT_EQ(softmax["name"],
            "softmax_warp_rows(float const*, float*, int, int)");  // no "[clone .kd]"
  EXPECT_EQ(softmax["launches"], 2);
  EXPECT_NEAR(softmax["duration_ms"].get<double>(), 0.021, 1e-12);  // (20000 + 22000) / 2 ns
  EXPECT_NEAR(softmax["valu_utilization_pct"].get<double>(), 85, 1e-9);
  EXPECT_NEAR(softmax["l2_hit_rate_pct"].get<double>(), 45, 1e-9);
  EXPECT_EQ(softmax["vgprs"], 16);
  EXPECT_EQ(softmax["sgprs"], 24);
  // (32768 + 32768) KiB over 20000 ns and over 22000 ns, averaged.
  EXPECT_NEAR(softmax["dram_bandwidth_gbs"].get<double>(),
              (67108864.0 / 20000 + 67108864.0 / 22000) / 2, 1e-6);
  const nlohmann::json& scale = Kernel(p, 1);
  EXPECT_EQ(scale["launches"], 1);
  EXPECT_NEAR(scale["duration_ms"].get<double>(), 0.008, 1e-12);
  EXPECT_FALSE(scale.contains("l2_hit_rate_pct"));  // an empty counter is left out, not zero
  EXPECT_EQ(scale["agprs"], 4);
  EXPECT_EQ(scale["lds_bytes"], 1024);
  EXPECT_NEAR(p["duration_ms"].get<double>(), 0.05, 1e-12);  // 2 x 0.021 + 0.008
}

TEST(RocprofTest, GivenTheStatsCsvItGivesCallsAndMeanDurations) {
  nlohmann::json p = ParseRocprofStatsCsv(
      "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\"\n"
      "\"softmax_warp_rows(float const*, float*, int, int) [clone .kd]\",2,42000,21000,84.0\n"
      "\"scale_rows(float*, int) [clone .kd]\",1,8000,8000,16.0\n");
  ASSERT_FALSE(p.contains("error")) << p.dump(1);
  ASSERT_EQ(p["kernels"].size(), 2u);
  EXPECT_EQ(Kernel(p, 0)["launches"], 2);
  EXPECT_NEAR(Kernel(p, 0)["duration_ms"].get<double>(), 0.021, 1e-12);
  EXPECT_NEAR(p["duration_ms"].get<double>(), 0.05, 1e-12);
}

TEST(RocprofTest, GivenARocprofV3KernelTraceItUsesItsTimestamps) {
  nlohmann::json p = ParseRocprofFolder(kData + "/v3");
  ASSERT_FALSE(p.contains("error")) << p.dump(1);
  EXPECT_EQ(p["source"], "1234_kernel_trace.csv");
  ASSERT_EQ(p["kernels"].size(), 1u);
  EXPECT_EQ(Kernel(p, 0)["name"], "row_sum_warp(float const*, float*, int, int)");
  EXPECT_EQ(Kernel(p, 0)["launches"], 2);
  EXPECT_NEAR(Kernel(p, 0)["duration_ms"].get<double>(), 0.01, 1e-12);  // (12500 + 7500) / 2 ns
  EXPECT_EQ(Kernel(p, 0)["vgprs"], 12);
}

TEST(RocprofTest, GivenOnlyTheJsonTraceItReadsTheGpuLaneAndSkipsApiCalls) {
  nlohmann::json p = ParseRocprofFolder(kData + "/trace_only");
  ASSERT_FALSE(p.contains("error")) << p.dump(1);
  EXPECT_EQ(p["source"], "results.json");
  ASSERT_EQ(p["kernels"].size(), 1u);  // hipLaunchKernel is on the HIP lane
  EXPECT_EQ(Kernel(p, 0)["name"], "gelu_vec4(float const*, float*, long)");
  EXPECT_EQ(Kernel(p, 0)["launches"], 2);
  EXPECT_NEAR(Kernel(p, 0)["duration_ms"].get<double>(), 0.042, 1e-12);  // (40 + 44) / 2 us
}

TEST(RocprofTest, GivenNoOutputOrGarbageItSaysSo) {
  nlohmann::json empty = ParseRocprofFolder(kData + "/empty");
  EXPECT_NE(empty.value("error", "").find("no rocprof output"), std::string::npos) << empty.dump();
  EXPECT_TRUE(empty["kernels"].empty());
  EXPECT_TRUE(ParseRocprofDispatchCsv("Index,Name\n0,x\n").contains("error"));
  EXPECT_TRUE(ParseRocprofStatsCsv("not,a,stats,file\n").contains("error"));
  EXPECT_TRUE(ParseRocprofTraceJson("{\"traceEvents\": 3}").contains("error"));
  EXPECT_TRUE(ParseRocprofTraceJson("{ truncated").contains("error"));
  nlohmann::json no_lanes =
      ParseRocprofTraceJson(R"({"traceEvents":[{"name":"k","ph":"X","pid":1,"dur":2}]})");
  EXPECT_TRUE(no_lanes.contains("error"));
}

TEST(RocprofTest, GivenKforgesCountersTheInputFileAndCommandAskForThem) {
  std::string input = RocprofInputFile();
  EXPECT_NE(input.find("pmc: VALUUtilization"), std::string::npos) << input;
  EXPECT_NE(input.find("FetchSize WriteSize"), std::string::npos) << input;
  std::vector<std::string> argv =
      RocprofCommand("/opt/rocm/bin/rocprof", "/job/input.txt", "/job/prof");
  ASSERT_GE(argv.size(), 8u);
  EXPECT_EQ(argv[1], "-i");
  EXPECT_EQ(argv.back(), "/job/prof/results.csv");
}

// The wrapper `kforge eval --profile -b hip` runs, with a stand-in for rocprof (a script that
// checks its arguments, writes a fixture where -o says and runs the rest), in a job folder.
TEST(RocprofTest, GivenTheWrapperItWritesTheInputFileAndLeavesRocprofsFilesWhereTheParserLooks) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kforge-rocprof-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path fake = dir / "fake_rocprof";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "[ \"$1\" = -i ] && grep -q 'pmc: VALUUtilization' \"$2\" || exit 3\n"
                         "[ \"$6\" = -o ] || exit 4\n"
                         "cp '"
                      << kData
                      << "/v1/results.csv' \"$7\" || exit 5\n"
                         "shift 7\nexec \"$@\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  std::string cmd = "cd '" + dir.string() + "' &&";
  for (const std::string& a : RocprofWrapper(fake.string())) {
    std::string q;
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " '" + q + "'";
  }
  cmd += " touch worker-ran";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_TRUE(fs::exists(dir / "worker-ran"));
  nlohmann::json p = ParseRocprofFolder((dir / "rocprof").string());
  EXPECT_FALSE(p.contains("error")) << p.dump(1);
  EXPECT_EQ(p["kernels"].size(), 2u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kforge
