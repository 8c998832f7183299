// Specifications of the profile stage's parsers. The ncu and compute-sanitizer samples below
// were written by hand from the documented output formats (ncu --csv: one row per kernel
// launch and metric with the columns named in the header, units spelled "nsecond" or "ns",
// "byte/second" or "byte/ns"; compute-sanitizer: "========="
// prefixed lines ending in an ERROR SUMMARY); they are not captured from a real run.
#include <gtest/gtest.h>

#include "backend/cuda/cuda_tools.h"

namespace kforge {
namespace {

const char kNcuCsv[] = R"csv(==PROF== Connected to process 4242 (/opt/kforge/bin/kforge-worker)
==PROF== Profiling "softmax_rows" - 0: 0%....50%....100% - 9 passes
kforge-worker: check set 0 poison a
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","kforge-worker","127.0.0.1","softmax_rows(const float *, float *, int, int)","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","12,480"
"0","4242","kforge-worker","127.0.0.1","softmax_rows(const float *, float *, int, int)","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes.sum.per_second","byte/second","2,850,000,000,000"
"0","4242","kforge-worker","127.0.0.1","softmax_rows(const float *, float *, int, int)","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","71.5"
"0","4242","kforge-worker","127.0.0.1","softmax_rows(const float *, float *, int, int)","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","48.25"
"0","4242","kforge-worker","127.0.0.1","softmax_rows(const float *, float *, int, int)","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active","%","n/a"
"0","4242","kforge-worker","127.0.0.1","softmax_rows(const float *, float *, int, int)","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","ratio","6.5"
"0","4242","kforge-worker","127.0.0.1","softmax_rows(const float *, float *, int, int)","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","ratio","1.25"
"1","4242","kforge-worker","127.0.0.1","scale_rows(float *, int)","1","13","(128, 1, 1)","(64, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","us","2.5"
"1","4242","kforge-worker","127.0.0.1","scale_rows(float *, int)","1","13","(128, 1, 1)","(64, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes.sum.per_second","byte/ns","1,500.5"
==PROF== Disconnected from process 4242
)csv";

TEST(NcuCsvTest, GivenTheDocumentedCsvItNormalisesUnitsPerKernel) {
  nlohmann::json p = ParseNcuCsv(kNcuCsv);
  ASSERT_FALSE(p.contains("error")) << p.dump(1);
  ASSERT_EQ(p["kernels"].size(), 2u);
  const nlohmann::json& k = p["kernels"][0];
  EXPECT_EQ(k["name"], "softmax_rows(const float *, float *, int, int)");
  EXPECT_EQ(k["launches"], 1);
  EXPECT_NEAR(k["duration_ms"].get<double>(), 0.01248, 1e-9);
  EXPECT_NEAR(k["dram_bandwidth_gbs"].get<double>(), 2850, 1e-6);
  EXPECT_NEAR(k["achieved_occupancy_pct"].get<double>(), 71.5, 1e-9);
  EXPECT_NEAR(k["l2_hit_rate_pct"].get<double>(), 48.25, 1e-9);
  EXPECT_FALSE(k.contains("tensor_pipe_pct"));  // "n/a" is left out, not zero
  ASSERT_EQ(k["top_stalls"].size(), 2u);
  EXPECT_EQ(k["top_stalls"][0]["reason"], "long_scoreboard");  // largest first
  EXPECT_NEAR(p["kernels"][1]["duration_ms"].get<double>(), 0.0025, 1e-12);
  EXPECT_NEAR(p["kernels"][1]["dram_bandwidth_gbs"].get<double>(), 1500.5, 1e-9);
  EXPECT_NEAR(p["duration_ms"].get<double>(), 0.01498, 1e-9);
}

TEST(NcuCsvTest, GivenNoTableItSaysSo) {
  nlohmann::json p = ParseNcuCsv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n");
  EXPECT_TRUE(p.contains("error"));
  EXPECT_TRUE(p["kernels"].empty());
}

TEST(NcuCommandTest, GivenAvailableMetricsItRequestsOnlyThose) {
  std::vector<std::string> argv = NcuCommand("/usr/local/cuda/bin/ncu", {"dram__bytes", "lts__t_sector_hit_rate"});
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[1], "--clock-control");
  EXPECT_EQ(argv[2], "none");
  const std::string& list = argv.back();
  EXPECT_NE(list.find("dram__bytes.sum.per_second"), std::string::npos);
  EXPECT_NE(list.find("gpu__time_duration.sum"), std::string::npos);  // always asked
  EXPECT_EQ(list.find("sm__pipe_tensor_op_gmma"), std::string::npos);
}

TEST(SanitizerTest, GivenAMemcheckReportItCountsErrorsAndKeepsTheLines) {
  const char out[] = "kforge-worker: check set 0 poison a\n"
                     "========= COMPUTE-SANITIZER\n"
                     "========= Invalid __global__ write of size 4 bytes\n"
                     "=========     at bad_write(float *)+0x70 in bad.cu:12\n"
                     "=========     by thread (0,0,0) in block (0,0,0)\n"
                     "========= ERROR SUMMARY: 1 error\n";
  nlohmann::json s = SummarizeSanitizer("memcheck", out);
  EXPECT_EQ(s["errors"], 1);
  EXPECT_FALSE(s["clean"].get<bool>());
  EXPECT_NE(s["report"].get<std::string>().find("bad.cu:12"), std::string::npos);
  EXPECT_EQ(s["report"].get<std::string>().find("kforge-worker"), std::string::npos);
}

}  // namespace
}  // namespace kforge
