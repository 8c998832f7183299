// Specifications of the kernel record that hold without a GPU: where libcupti is looked for
// and what the record says when it is missing, the decoding of CUPTI's activity records, and
// the grouping of activities into the "kernels" record (fed by hand, no CUPTI).
#include "backend/cuda/cupti.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "backend/cuda/cuda_driver.h"
#include "base/files.h"
#include "base/scoped_env.h"

#if KFORGE_HAVE_CUPTI_H
#include <cupti.h>
#endif

namespace kforge {
namespace cupti {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Where this machine's toolkit keeps CUPTI (the CUDA 13.0 layout: lib/, not extras/).
const char kToolkitCupti[] = "/usr/local/cuda-13.0/lib/libcupti.so";

Activity Kernel(const std::string& name, uint64_t start, uint64_t end, uint32_t stream,
                bool graph = false) {
  Activity a;
  a.name = name;
  a.start = start;
  a.end = end;
  a.stream = stream;
  a.graph = graph;
  return a;
}

Activity Copy(Activity::Kind kind, uint64_t start, uint64_t end, uint64_t bytes) {
  Activity a;
  a.kind = kind;
  a.start = start;
  a.end = end;
  a.bytes = bytes;
  return a;
}

TEST(CuptiLoaderTest, GivenNoLibraryAnywhereTheMessageNamesEveryPlaceLooked) {
  Result<Library> lib =
      LoadCuptiFrom({"/nonexistent/cuda/lib64/libcupti.so", "libcupti-kforge-absent.so"});
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  const std::string& m = lib.status().message();
  EXPECT_EQ(m.rfind("libcupti not found (looked at /nonexistent/cuda/lib64/libcupti.so, "
                    "libcupti-kforge-absent.so)",
                    0),
            0u)
      << m;
  EXPECT_NE(m.find("KFORGE_CUPTI"), std::string::npos) << m;
}

TEST(CuptiLoaderTest, GivenAFileThatIsNoLibraryTheMessageSaysWhyItDidNotLoad) {
  fs::path dir = MakeTempDir("cupti-bad").value();
  ASSERT_TRUE(WriteFileAtomic(dir / "libcupti.so", "not an ELF file").ok());
  Result<Library> lib = LoadCuptiFrom({(dir / "libcupti.so").string()});
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("is there but does not load"), std::string::npos)
      << lib.status().message();
  fs::remove_all(dir);
}

TEST(CuptiLoaderTest, GivenTheToolkitsLibcuptiItLoadsAndBindsEveryEntryPoint) {
  if (access(kToolkitCupti, R_OK) != 0) GTEST_SKIP() << kToolkitCupti << " is not on this machine";
  Result<Library> lib = LoadCuptiFrom({"/nonexistent/libcupti.so", kToolkitCupti});
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  EXPECT_EQ(lib->path, kToolkitCupti);
  uint32_t version = 0;
  ASSERT_EQ(lib->api->GetVersion(&version), kSuccess);
  EXPECT_GT(version, 0u);
  EXPECT_NE(lib->api->GetStreamIdEx, nullptr);
  const char* text = nullptr;
  lib->api->GetResultString(kErrorInsufficientPrivileges, &text);
  ASSERT_NE(text, nullptr);
  EXPECT_NE(std::string(text).find("INSUFFICIENT_PRIVILEGES"), std::string::npos) << text;
}

TEST(CuptiLoaderTest, GivenKforgeCuptiAFolderItIsSearchedFirstThenTheLoaderThenTheToolkit) {
  ScopedEnv env("KFORGE_CUPTI", "/opt/my-cupti");
  ScopedEnv nvcc("KFORGE_NVCC", "/usr/local/cuda-13.0/bin/nvcc");
  std::vector<std::string> c = CuptiCandidates();
  ASSERT_GE(c.size(), 6u);
  // /opt/my-cupti is no folder here: taken as the library's own path.
  EXPECT_EQ(c[0], "/opt/my-cupti");
  EXPECT_EQ(c[1], "libcupti.so");
  EXPECT_EQ(c[2], "libcupti.so.13");
  EXPECT_EQ(c[3], "libcupti.so.12");
  EXPECT_EQ(c[4], "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  if (access("/usr/local/cuda-13.0/bin/nvcc", X_OK) == 0) {
    EXPECT_NE(std::find(c.begin(), c.end(), "/usr/local/cuda-13.0/lib/libcupti.so"), c.end());
    EXPECT_NE(
        std::find(c.begin(), c.end(), "/usr/local/cuda-13.0/extras/CUPTI/lib64/libcupti.so.13"),
        c.end());
  }
  fs::path dir = MakeTempDir("cupti-dir").value();
  ScopedEnv folder("KFORGE_CUPTI", dir.string());
  c = CuptiCandidates();
  EXPECT_EQ(c[0], (dir / "libcupti.so").string());
  EXPECT_EQ(c[2], (dir / "libcupti.so.12").string());
  fs::remove_all(dir);
}

TEST(CuptiLoaderTest, GivenThisMachinesToolkitTheDefaultSearchFindsIt) {
  if (access(kToolkitCupti, R_OK) != 0) GTEST_SKIP() << kToolkitCupti << " is not on this machine";
  Result<Library> lib = LoadCuptiFrom(CuptiCandidates());
  EXPECT_TRUE(lib.ok()) << lib.status().message();
}

TEST(KernelRecordTest, GivenKernelsTheyAreGroupedByNameInOrderOfFirstStart) {
  RecordContext c;
  c.call = "check set 0";
  c.window = {1000, 2000, 9000};
  c.harness_stream = 7;
  std::vector<Activity> a = {
      Kernel("_Z6reducePKfPf", 3000, 3500, 7),  // ends after the return (2000): normal async work
      Kernel("_Z5scalePKfPf", 1100, 1300, 7),
      Kernel("_Z5scalePKfPf", 1400, 1600, 13),
      Kernel("_Z5scalePKfPf", 1700, 2400, 7, /*graph=*/true),
      Copy(Activity::Kind::kMemcpy, 1200, 1250, 1000),
      Copy(Activity::Kind::kMemcpy, 1300, 1310, 234),
      Copy(Activity::Kind::kMemset, 1000, 1100, 64),
  };
  json r = BuildKernelRecord(a, c);
  EXPECT_EQ(r["source"], "cupti");
  EXPECT_EQ(r["available"], true);
  EXPECT_EQ(r["call"], "check set 0");
  ASSERT_EQ(r["records"].size(), 2u) << r.dump(1);
  const json& scale = r["records"][0];
  EXPECT_EQ(scale["name"], "_Z5scalePKfPf");
  EXPECT_EQ(scale["calls"], 3);
  EXPECT_NEAR(scale["device_ms"].get<double>(), (200 + 200 + 700) * 1e-6, 1e-12);
  EXPECT_EQ(scale["streams"], json::array({7, 13}));
  EXPECT_EQ(scale["graph"], true);
  EXPECT_EQ(scale["after_return"], 1);
  const json& reduce = r["records"][1];
  EXPECT_EQ(reduce["calls"], 1);
  EXPECT_EQ(reduce["graph"], false);
  EXPECT_EQ(reduce["after_return"], 1);
  EXPECT_EQ(r["memcpy"], json({{"count", 2}, {"device_ms", 60e-6}, {"bytes", 1234}}));
  EXPECT_EQ(r["memset"]["count"], 1);
  EXPECT_EQ(r["memset"]["bytes"], 64);
  EXPECT_NEAR(r["window_ms"].get<double>(), (3500 - 1100) * 1e-6, 1e-12);
  EXPECT_NEAR(r["host"]["return_ms"].get<double>(), 1000e-6, 1e-12);
  EXPECT_NEAR(r["host"]["synced_ms"].get<double>(), 8000e-6, 1e-12);
  EXPECT_EQ(r["harness_stream"], 7);
  EXPECT_EQ(r["dropped"], 0);
}

TEST(KernelRecordTest, GivenAKernelEndingExactlyAtTheReturnItIsNotCountedAfterIt) {
  RecordContext c;
  c.window = {100, 500, 800};
  json r = BuildKernelRecord(
      {Kernel("k", 100, 500, 1), Kernel("k", 200, 501, 1), Kernel("k", 600, 700, 2)}, c);
  EXPECT_EQ(r["records"][0]["after_return"], 2);
  EXPECT_EQ(r["records"][0]["calls"], 3);
}

TEST(KernelRecordTest, GivenNoReturnTimestampNothingIsCountedAfterIt) {
  RecordContext c;  // window all zero: the launch never marked it
  json r = BuildKernelRecord({Kernel("k", 100, 500, 1)}, c);
  EXPECT_EQ(r["records"][0]["after_return"], 0);
  EXPECT_FALSE(r.contains("host"));
}

TEST(KernelRecordTest, GivenThousandsOfKernelNamesTheRecordKeepsTheFirstAndCountsTheRest) {
  std::vector<Activity> a;
  for (int i = 0; i < 300; ++i) a.push_back(Kernel("k" + std::to_string(i), 100 + i, 101 + i, 1));
  a.push_back(Kernel(std::string(10000, 'x'), 50, 60, 1));  // the first to start, a huge name
  json r = BuildKernelRecord(a, RecordContext{});
  ASSERT_EQ(r["records"].size(), 256u);
  EXPECT_LT(r["records"][0]["name"].get<std::string>().size(), 4200u);
  EXPECT_EQ(r["records"][1]["name"], "k0");
  EXPECT_EQ(r["records_left_out"]["count"], 301 - 256);
  EXPECT_EQ(r["records_left_out"]["calls"], 301 - 256);
}

TEST(KernelRecordTest, GivenOnlyCopiesTheRecordsAreEmptyAndTheCopiesCounted) {
  RecordContext c;
  c.call = "check set 0";
  json r = BuildKernelRecord(
      {Copy(Activity::Kind::kMemcpy, 10, 30, 16384), Copy(Activity::Kind::kMemcpy, 40, 50, 16384)},
      c);
  EXPECT_TRUE(r["records"].empty());
  EXPECT_EQ(r["memcpy"]["count"], 2);
  EXPECT_EQ(r["memcpy"]["bytes"], 32768);
  EXPECT_EQ(r["window_ms"], 0.0);
}

TEST(KernelRecordTest, GivenCopiesNotEnabledTheRecordSaysWhyInsteadOfCountingZero) {
  RecordContext c;
  c.memcpy_reason = "cuptiActivityEnable(MEMCPY) failed: CUPTI_ERROR_NOT_SUPPORTED";
  json r = BuildKernelRecord({}, c);
  EXPECT_FALSE(r.contains("memcpy"));
  EXPECT_EQ(r["memcpy_reason"], c.memcpy_reason);
}

TEST(KernelRecordTest, GivenCuptiUnavailableTheRecordSaysWhy) {
  json r = UnavailableRecord("check set 0", "libcupti not found (looked at x)");
  EXPECT_EQ(r, json({{"source", "cupti"},
                     {"available", false},
                     {"call", "check set 0"},
                     {"reason", "libcupti not found (looked at x)"}}));
  KernelRecorder never(nullptr, nullptr);
  json s = never.Stop();
  EXPECT_EQ(s["available"], false);
  EXPECT_FALSE(s["reason"].get<std::string>().empty());
}

TEST(ActivityDecodeTest, GivenEachRecordKindAsCuptiLaysItOutItIsDecoded) {
  alignas(8) unsigned char raw[512] = {};
  auto* k = reinterpret_cast<KernelRecord*>(raw);
  k->kind = kKindConcurrentKernel;
  k->start = 10;
  k->end = 20;
  k->stream_id = 13;
  k->name = "_Z1kv";
  k->graph_id = 4;
  std::optional<Activity> a = DecodeActivity(raw);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, Activity::Kind::kKernel);
  EXPECT_EQ(a->name, "_Z1kv");
  EXPECT_EQ(a->start, 10u);
  EXPECT_EQ(a->end, 20u);
  EXPECT_EQ(a->stream, 13u);
  EXPECT_TRUE(a->graph);

  std::fill(std::begin(raw), std::end(raw), 0);
  auto* m = reinterpret_cast<MemcpyRecord*>(raw);
  m->kind = kKindMemcpy;
  m->bytes = 4096;
  m->stream_id = 7;
  a = DecodeActivity(raw);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, Activity::Kind::kMemcpy);
  EXPECT_EQ(a->bytes, 4096u);
  EXPECT_EQ(a->stream, 7u);
  EXPECT_FALSE(a->graph);

  std::fill(std::begin(raw), std::end(raw), 0);
  auto* s = reinterpret_cast<MemsetRecord*>(raw);
  s->kind = kKindMemset;
  s->bytes = 64;
  a = DecodeActivity(raw);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, Activity::Kind::kMemset);

  std::fill(std::begin(raw), std::end(raw), 0);
  *reinterpret_cast<int32_t*>(raw) = 5;  // CUPTI_ACTIVITY_KIND_RUNTIME: not read
  EXPECT_FALSE(DecodeActivity(raw).has_value());
}

// Without a driver CUPTI cannot attach: the recorder says so and the evaluation would go on.
TEST(KernelRecorderTest, GivenNoDeviceStartSucceedsAndTheRecordIsUnavailableWithTheReason) {
  if (cu::LoadCudaDriver().ok())
    GTEST_SKIP() << "a CUDA driver is usable here (the GPU tests record for real)";
  KernelRecorder r(nullptr, nullptr);
  r.Start("check set 0");
  EXPECT_FALSE(r.active());
  json s = r.Stop();
  EXPECT_EQ(s["source"], "cupti");
  EXPECT_EQ(s["available"], false);
  EXPECT_EQ(s["call"], "check set 0");
  EXPECT_FALSE(s["reason"].get<std::string>().empty()) << s.dump();
  std::cout << "reason here: " << s["reason"] << "\n";
}

#if KFORGE_HAVE_CUPTI_H
// kforge's own layouts against the installed header (the build never includes it).
TEST(CuptiLayoutTest, GivenTheInstalledHeaderTheModelledOffsetsMatchIt) {
  EXPECT_GE(CUPTI_API_VERSION, 130001) << "layouts were modelled on CUPTI 13.0; recheck them";
  static_assert(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL == kKindConcurrentKernel);
  static_assert(CUPTI_ACTIVITY_KIND_MEMCPY == kKindMemcpy &&
                CUPTI_ACTIVITY_KIND_MEMSET == kKindMemset);
  static_assert(CUPTI_ERROR_MAX_LIMIT_REACHED == kErrorMaxLimitReached);
  static_assert(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES == kErrorInsufficientPrivileges);
  static_assert(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED == kFlushForced);
#define KF_SAME(ours, theirs, field_ours, field_theirs) \
  static_assert(offsetof(ours, field_ours) == offsetof(theirs, field_theirs), #field_theirs)
  KF_SAME(KernelRecord, CUpti_ActivityKernel10, start, start);
  KF_SAME(KernelRecord, CUpti_ActivityKernel10, end, end);
  KF_SAME(KernelRecord, CUpti_ActivityKernel10, stream_id, streamId);
  KF_SAME(KernelRecord, CUpti_ActivityKernel10, name, name);
  KF_SAME(KernelRecord, CUpti_ActivityKernel10, graph_node_id, graphNodeId);
  KF_SAME(KernelRecord, CUpti_ActivityKernel10, graph_id, graphId);
  KF_SAME(MemcpyRecord, CUpti_ActivityMemcpy6, bytes, bytes);
  KF_SAME(MemcpyRecord, CUpti_ActivityMemcpy6, start, start);
  KF_SAME(MemcpyRecord, CUpti_ActivityMemcpy6, end, end);
  KF_SAME(MemcpyRecord, CUpti_ActivityMemcpy6, stream_id, streamId);
  KF_SAME(MemcpyRecord, CUpti_ActivityMemcpy6, graph_node_id, graphNodeId);
  KF_SAME(MemcpyRecord, CUpti_ActivityMemcpy6, graph_id, graphId);
  KF_SAME(MemsetRecord, CUpti_ActivityMemset4, bytes, bytes);
  KF_SAME(MemsetRecord, CUpti_ActivityMemset4, start, start);
  KF_SAME(MemsetRecord, CUpti_ActivityMemset4, end, end);
  KF_SAME(MemsetRecord, CUpti_ActivityMemset4, stream_id, streamId);
  KF_SAME(MemsetRecord, CUpti_ActivityMemset4, graph_node_id, graphNodeId);
  KF_SAME(MemsetRecord, CUpti_ActivityMemset4, graph_id, graphId);
#undef KF_SAME
}
#endif

}  // namespace
}  // namespace cupti
}  // namespace kforge
