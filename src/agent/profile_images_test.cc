// Profile images: the charts a verdict gives, the gnuplot scripts they become, and rendering
// through a fake gnuplot, a missing one and (where installed) the real one.
#include "agent/profile_images.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "base/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// A correct cpp verdict as the evaluator writes it (docs/verdict-schema.md): 2 MFLOP over
// 8 MB, measured peaks 20 GB/s and 150 GFLOP/s, theoretical 40 GB/s and 600 GFLOP/s.
json CpuVerdict() {
  return json::parse(R"({
    "status": "correct",
    "timing": {"median_ms": 0.5},
    "roofline": {"flops": 2e6, "bytes": 8e6, "floor_ms": 0.2, "achievable_floor_ms": 0.4, "sol_percent": 80,
                 "theoretical": {"bound": "memory", "gflops": 600, "bandwidth_gbs": 40},
                 "achievable": {"bound": "memory", "gflops": 150, "bandwidth_gbs": 20}},
    "fingerprint": {"peaks": {"bandwidth_gbs": 19, "fp32_gflops": 140}}
  })");
}

AttemptPoint Point(int64_t number, double ms, bool seed = false) {
  return {number, seed, ms, 2e6, 8e6};
}

json CudaVerdict() {
  json v = CpuVerdict();
  v["kernels"] = json::parse(R"({"source": "cupti", "available": true, "call": "check set 0",
    "records": [{"name": "scale_kernel", "calls": 1, "device_ms": 0.003, "own": true},
                {"name": "ampere_sgemm_128x64_nn", "calls": 2, "device_ms": 0.012, "own": false}],
    "memcpy": {"count": 2, "device_ms": 0.001, "bytes": 4096}, "memset": {"count": 0, "device_ms": 0, "bytes": 0}})");
  return v;
}

TEST(RooflineChartTest, GivenAVerdictAndEarlierAttemptsTheScriptHoldsBothRoofsAndEveryPoint) {
  Result<RooflineChart> c = BuildRooflineChart("scale (cpp)", Point(5, 0.5), CpuVerdict(),
                                               {Point(1, 8.0, true), Point(3, 2.0), Point(5, 0.5)});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // The measured roof comes from roofline.achievable (not the fingerprint's older peaks).
  EXPECT_EQ(c->achievable_gbs, 20);
  EXPECT_EQ(c->achievable_gflops, 150);
  ASSERT_EQ(c->points.size(), 3u);  // the best once, last
  EXPECT_EQ(c->points.back().kind, RooflineChart::Point::kBest);
  EXPECT_DOUBLE_EQ(c->points.back().intensity, 0.25);
  EXPECT_DOUBLE_EQ(c->points.back().gflops, 4.0);  // 2e6 flop in 0.5 ms
  GnuplotJob job = RooflineJob(*c);
  EXPECT_EQ(job.name, "roofline");
  EXPECT_TRUE(Contains(job.script, "theoretical(x) = (x * 40 < 600) ? x * 40 : 600")) << job.script;
  EXPECT_TRUE(Contains(job.script, "achievable(x) = (x * 20 < 150) ? x * 20 : 150")) << job.script;
  EXPECT_TRUE(Contains(job.script, "set logscale xy"));
  EXPECT_TRUE(Contains(job.script, "best attempt 5 at 80% SOL"));
  const std::string& points = job.data["points.dat"];
  EXPECT_TRUE(Contains(points, "0.25 0.25 \"#1 seed\" 0\n")) << points;
  EXPECT_TRUE(Contains(points, "0.25 1 \"#3\" 1\n")) << points;
  EXPECT_TRUE(Contains(points, "0.25 4 \"#5 best\" 2\n")) << points;
  // The ranges hold the points and both ridge points (7.5 and 15 flop/byte).
  EXPECT_TRUE(Contains(job.script, "set xrange [0.03125:120]")) << job.script;
}

TEST(RooflineChartTest, GivenAProblemWithoutFlopsThereIsNoRooflineAndItSaysWhy) {
  AttemptPoint best = Point(2, 1.0);
  best.flops = 0;
  Result<RooflineChart> c = BuildRooflineChart("copy (cpp)", best, CpuVerdict(), {best});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "counts no flops")) << c.status().message();
}

TEST(KernelChartTest, GivenACpuVerdictThereIsNoKernelChartAndItSaysWhy) {
  Result<KernelChart> c = BuildKernelChart("scale (cpp)", CpuVerdict());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "no kernel record")) << c.status().message();
}

TEST(KernelChartTest, GivenAKernelRecordTheBarsAreLongestFirstWithCopiesAfter) {
  Result<KernelChart> c = BuildKernelChart("scale (cuda)", CudaVerdict());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->bars.size(), 3u);  // memset had no call
  EXPECT_EQ(c->bars[0].name, "ampere_sgemm_128x64_nn");
  EXPECT_EQ(c->bars[0].kind, KernelChart::Bar::kLibrary);
  EXPECT_EQ(c->bars[1].name, "scale_kernel");
  EXPECT_EQ(c->bars[1].kind, KernelChart::Bar::kOwn);
  EXPECT_EQ(c->bars[2].name, "memcpy");
  GnuplotJob job = KernelJob(*c);
  EXPECT_EQ(
      job.data["kernels.dat"],
      "\"ampere_sgemm_128x64_nn\" 0.012 2 0\n\"scale_kernel\" 0.003 1 1\n\"memcpy\" 0.001 2 2\n");
  EXPECT_TRUE(Contains(job.script, "title \"own kernels\""));
  EXPECT_TRUE(Contains(job.script, "one checking call (cupti)"));
}

TEST(KernelChartTest, GivenManyKernelsTheShortestAreOneBar) {
  json v = CudaVerdict();
  v["kernels"]["records"] = json::array();
  for (int i = 0; i < 20; ++i)
    v["kernels"]["records"].push_back(
        {{"name", "k" + std::to_string(i)}, {"calls", 1}, {"device_ms", 1.0 + i}});
  Result<KernelChart> c = BuildKernelChart("many", v);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->bars.size(), kMaxKernelBars + 1);  // and memcpy
  EXPECT_EQ(c->bars[0].name, "k19");
  EXPECT_EQ(c->bars[kMaxKernelBars - 1].name, "(9 more kernels)");
  EXPECT_DOUBLE_EQ(c->bars[kMaxKernelBars - 1].device_ms, 45.0);  // 1 + 2 + ... + 9
}

// A candidate names its kernels: nothing in a name may end the data file's quoted string.
TEST(KernelChartTest, GivenAKernelNameWithQuotesAndEscapesTheyDoNotReachGnuplot) {
  json v = CudaVerdict();
  v["kernels"]["records"] = json::array(
      {{{"name", "k\"; system(\"touch /tmp/x\") #\\n\xc3\xa9"}, {"calls", 1}, {"device_ms", 1.0}}});
  Result<KernelChart> c = BuildKernelChart("evil", v);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->bars[0].name, "k?; system(?touch /tmp/x?) #?n??");
  EXPECT_FALSE(Contains(KernelJob(*c).script, "system"));
}

// A real verdict from an H200 (kforge eval of a two-kernel gelu, -b cuda; CUPTI's record):
// mangled names become the source's, the slower kernel comes first, and both charts render.
TEST(KernelChartTest, GivenARealH200VerdictItsKernelsAreNamedAsInTheSourceAndBothChartsRender) {
  json v = json::parse(
      ReadFile(fs::path(KFORGE_AGENT_TESTDATA) / "h200_gelu_two_kernels.verdict.json").value());
  Result<KernelChart> k = BuildKernelChart("gelu (cuda)", v);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_EQ(k->bars.size(), 2u);  // no copies or sets in that call
  EXPECT_EQ(k->bars[0].name, "gelu_second_half_slow(float const*, float*, l...");
  EXPECT_EQ(k->bars[1].name, "gelu_first_half(float const*, float*, long long)");
  EXPECT_EQ(k->bars[1].kind, KernelChart::Bar::kOwn);
  const json& roof = v["roofline"];
  AttemptPoint best{2, false, v["timing"]["median_ms"].get<double>(), roof["flops"].get<double>(),
                    roof["bytes"].get<double>()};
  Result<RooflineChart> r = BuildRooflineChart("gelu (cuda)", best, v, {best});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->achievable_gbs, 3911.0, 1.0);  // the H200's measured bandwidth
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  fs::path dir = MakeScratchDir("images-h200").value();
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  ProfileImages images = MakeProfileImages({"gelu (cuda)", best, v, {best}}, dir, "", *runner);
  ASSERT_EQ(images.images.size(), 2u) << ::testing::PrintToString(images.left_out);
  EXPECT_TRUE(images.left_out.empty());
  for (const ProfileImage& i : images.images)
    EXPECT_EQ(i.png.rfind("\x89PNG\r\n\x1a\n", 0), 0u) << i.name;
}

// A gnuplot stand-in: records what it was asked and writes a PNG signature as <name>.png.
class FakeGnuplot : public ProcessRunner {
 public:
  explicit FakeGnuplot(ProcessResult::End end = ProcessResult::End::kExited) : end_(end) {}
  ProcessResult Run(const ProcessSpec& spec) override {
    specs.push_back(spec);
    ProcessResult r;
    r.end = end_;
    r.exit_code = 0;
    if (end_ == ProcessResult::End::kStartFailed) {
      r.start_error = "execvp gnuplot: No such file or directory";
      return r;
    }
    size_t at = spec.stdin_data.find("set output '");
    std::string name =
        spec.stdin_data.substr(at + 12, spec.stdin_data.find('\'', at + 12) - at - 12);
    std::ofstream(spec.cwd / name) << "\x89PNG\r\n\x1a\n" << name;
    return r;
  }
  std::vector<ProcessSpec> specs;

 private:
  ProcessResult::End end_;
};

ProfileImageInput CudaInput() {
  return {"scale (cuda)", Point(5, 0.5), CudaVerdict(), {Point(1, 8.0, true), Point(5, 0.5)}};
}

TEST(MakeProfileImagesTest, GivenGnuplotBothImagesAreSavedBesideTheAttemptWithTheirHashes) {
  fs::path dir = MakeScratchDir("images-test").value() / "attempt-5";
  FakeGnuplot gnuplot;
  ProfileImages images = MakeProfileImages(CudaInput(), dir, "analysis-1-", gnuplot);
  EXPECT_FALSE(images.gnuplot_missing);
  EXPECT_TRUE(images.left_out.empty()) << images.left_out.front();
  ASSERT_EQ(images.images.size(), 2u);
  EXPECT_EQ(images.images[0].name, "roofline");
  EXPECT_EQ(images.images[0].path, dir / "analysis-1-roofline.png");
  EXPECT_EQ(ReadFile(dir / "analysis-1-kernels.png").value(), images.images[1].png);
  EXPECT_EQ(images.images[1].xxh128, Hash128Hex(images.images[1].png));
  // gnuplot ran sandboxed in a folder of its own, with the terminal line before the script.
  ASSERT_EQ(gnuplot.specs.size(), 2u);
  EXPECT_NE(gnuplot.specs[0].cwd, dir);
  EXPECT_EQ(gnuplot.specs[0].stdin_data.rfind("set terminal pngcairo size 960,720", 0), 0u);
  EXPECT_TRUE(gnuplot.specs[0].limits.isolate_network);
  json j = images.ToJson(dir.parent_path());
  EXPECT_EQ(j["images"][1]["file"], "attempt-5/analysis-1-kernels.png");
  EXPECT_EQ(j["images"][1]["xxh128"], images.images[1].xxh128);
  EXPECT_FALSE(j.contains("images_left_out"));
}

TEST(MakeProfileImagesTest, GivenNoGnuplotThereAreNoImagesAndTheReasonSaysHowToInstallIt) {
  fs::path dir = MakeScratchDir("images-test").value();
  FakeGnuplot missing(ProcessResult::End::kStartFailed);
  ProfileImages images = MakeProfileImages(CudaInput(), dir, "", missing);
  EXPECT_TRUE(images.gnuplot_missing);
  EXPECT_TRUE(images.images.empty());
  EXPECT_EQ(missing.specs.size(), 1u) << "tried once, not once per chart";
  ASSERT_EQ(images.left_out.size(), 1u);
  EXPECT_TRUE(Contains(images.left_out[0], "apt-get install gnuplot-nox")) << images.left_out[0];
  EXPECT_FALSE(fs::exists(dir / "roofline.png"));
}

// The real gnuplot in the real sandbox, where installed (scripts/setup installs gnuplot-nox).
TEST(RenderPngTest, GivenGnuplotTheRooflineAndKernelChartsRenderAsPng) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  for (const GnuplotJob& job :
       {RooflineJob(*BuildRooflineChart("scale (cuda)", Point(5, 0.5), CudaVerdict(),
                                        {Point(1, 8.0, true)})),
        KernelJob(*BuildKernelChart("scale (cuda)", CudaVerdict()))}) {
    SCOPED_TRACE(job.name);
    Result<std::string> png = RenderPng(job, *runner);
    ASSERT_TRUE(png.ok()) << png.status().ToString();
    EXPECT_EQ(png->rfind("\x89PNG\r\n\x1a\n", 0), 0u);
    EXPECT_GT(png->size(), 2000u);  // a drawn chart, not an empty frame
  }
}

TEST(RenderPngTest, GivenAGnuplotThatDoesNotExistInTheSandboxItIsNotFound) {
  setenv("KFORGE_GNUPLOT", "/nonexistent/gnuplot", 1);
  std::unique_ptr<ProcessRunner> runner = NewSandboxRunner();
  Result<std::string> png = RenderPng(KernelJob(*BuildKernelChart("x", CudaVerdict())), *runner);
  unsetenv("KFORGE_GNUPLOT");
  ASSERT_FALSE(png.ok());
  EXPECT_EQ(png.status().code(), StatusCode::kNotFound) << png.status().ToString();
  EXPECT_TRUE(Contains(png.status().message(), "gnuplot-nox")) << png.status().message();
}

}  // namespace
}  // namespace kforge
