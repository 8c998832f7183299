// Specifications of what a compile_error's log shows (eval/compile_log.h): the first errors
// within bounds, at the candidate's own files and lines, with the offending source line.
#include "eval/compile_log.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string Lines(int n, const std::string& what) {
  std::string out;
  for (int k = 1; k <= n; ++k) out += what + " " + std::to_string(k) + "\n";
  return out;
}

TEST(TrimCompilerLogTest, GivenALogWithinTheBoundsItIsUnchanged) {
  const std::string log = "a.cc:1:2: error: x\n    1 | x\n";
  EXPECT_EQ(TrimCompilerLog(log), log);
}

TEST(TrimCompilerLogTest, GivenALongLogItKeepsTheHeadAndSaysWhatWasCut) {
  const std::string trimmed = TrimCompilerLog(Lines(100, "a.cc:1:1: error: e"), {10, 1 << 20, 100});
  EXPECT_TRUE(Contains(trimmed, "error: e 1\n"));
  EXPECT_TRUE(Contains(trimmed, "error: e 10\n"));
  EXPECT_FALSE(Contains(trimmed, "error: e 11\n"));
  EXPECT_TRUE(Contains(trimmed, "[... 90 more lines (90 errors) cut ...]")) << trimmed;
}

TEST(TrimCompilerLogTest, GivenManyErrorsItStopsAfterTheFirstOnes) {
  std::string log;
  for (int k = 1; k <= 20; ++k) log += "a.cc:" + std::to_string(k) + ":1: error: e\n  note\n";
  const std::string trimmed = TrimCompilerLog(log, {1000, 1 << 20, 3});
  EXPECT_TRUE(Contains(trimmed, "a.cc:3:1: error"));
  EXPECT_FALSE(Contains(trimmed, "a.cc:4:1: error"));
  EXPECT_TRUE(Contains(trimmed, "(17 errors) cut")) << trimmed;
}

TEST(TrimCompilerLogTest, GivenAHugeLogItIsBoundedInBytes) {
  const std::string trimmed = TrimCompilerLog(Lines(5000, std::string(300, 'x')));
  EXPECT_LE(trimmed.size(), (16u << 10) + 100);
  EXPECT_LE(TrimCompilerLog(std::string(1 << 20, 'y')).size(), (16u << 10) + 100);
}

TEST(RenameSourceInLogTest, GivenTheCompiledNameItNamesTheCandidatesFileAtEveryLocation) {
  const std::string log =
      "candidate.cc: In function 'int kf_run(const kf_cpu_args*)':\n"
      "candidate.cc:3:60: error: 'local' was not declared in this scope\n"
      "In file included from /tmp/kforge-compile-Ab12/candidate.cc:1:\n"
      "candidate.cu(12): error: identifier \"x\" is undefined\n";
  std::string renamed = RenameSourceInLog(log, "candidate.cc", "scale.cc");
  renamed = RenameSourceInLog(renamed, "candidate.cu", "tiled.cu");
  EXPECT_TRUE(Contains(renamed, "scale.cc: In function"));
  EXPECT_TRUE(Contains(renamed, "scale.cc:3:60: error"));
  EXPECT_TRUE(Contains(renamed, "included from scale.cc:1:"));
  EXPECT_TRUE(Contains(renamed, "tiled.cu(12): error"));
  EXPECT_FALSE(Contains(renamed, "candidate.c"));
  EXPECT_FALSE(Contains(renamed, "/tmp"));
}

TEST(RenameSourceInLogTest, GivenTheNameInsideAnotherWordItIsLeftAlone) {
  const std::string log = "my_candidate.cc:1:1: x\nold_candidate.cc.bak\n";
  EXPECT_EQ(RenameSourceInLog(log, "candidate.cc", "scale.cc"), log);
}

const char kKernel[] =
    "__kernel void scale(__global const float* x, __global float* y, int n) {\n"
    "  int i = get_global_id(0);\n"
    "  float global = 1.0f;\n"
    "  if (i < n) y[i] = x[i] * global;\n"
    "}\n";

TEST(LocateKernelSourceTest, GivenASiblingClFileItMapsLineForLine) {
  KernelSourceMap m =
      LocateKernelSource(kKernel, {{"scale.cpp", "int x;\n"}, {"scale.cl", kKernel}});
  EXPECT_EQ(m.file, "scale.cl");
  EXPECT_EQ(m.lines, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(LocateKernelSourceTest, GivenARawStringItMapsToTheLinesOfTheCppFile) {
  const std::string cpp =
      std::string("#include \"kforge_opencl.h\"\n\nstatic const char* kSource = R\"CLC(\n") +
      kKernel + ")CLC\";\n";
  KernelSourceMap m = LocateKernelSource(std::string("\n") + kKernel, {{"scale.cpp", cpp}});
  EXPECT_EQ(m.file, "scale.cpp");
  EXPECT_EQ(m.lines[3],
            6);  // "  float global" is the kernel's line 4 (after the newline of R"CLC()
}

TEST(LocateKernelSourceTest, GivenOneLiteralPerLineItFindsEachLineInOrder) {
  const std::string cpp =
      "#include \"kforge_opencl.h\"\n"                                                         // 1
      "// float global = 1.0f; is how not to do it\n"                                          // 2
      "static const char* kSource =\n"                                                         // 3
      "    \"__kernel void scale(__global const float* x, __global float* y, int n) {\\n\"\n"  // 4
      "    \"  int i = get_global_id(0);\\n\"\n"                                               // 5
      "\n"                                                                                     // 6
      "    \"  float global = 1.0f;\\n\"\n"                                                    // 7
      "    \"  if (i < n) y[i] = x[i] * global;\\n\"\n"                                        // 8
      "    \"}\\n\";\n";                                                                       // 9
  KernelSourceMap m = LocateKernelSource(kKernel, {{"scale.cpp", cpp}});
  EXPECT_EQ(m.file, "scale.cpp");
  EXPECT_EQ(m.lines, (std::vector<int>{4, 5, 7, 8, 9}));
}

TEST(LocateKernelSourceTest, GivenASourceBuiltAtRunTimeItMapsNothing) {
  KernelSourceMap m = LocateKernelSource(kKernel, {{"scale.cpp", "snprintf(buf, n, fmt, 4);\n"}});
  EXPECT_EQ(m.file, "");
  EXPECT_EQ(m.lines, (std::vector<int>(5, 0)));
}

// What PoCL 3.1 (Debian 12) prints for kKernel: its kernel cache's temporary file, no source lines.
const char kPoclLog[] =
    "error: /root/.cache/pocl/kcache/tempfile_TYItoT.cl:3:16: expected identifier or '('\n"
    "error: /root/.cache/pocl/kcache/tempfile_TYItoT.cl:4:32: expected expression\n"
    "Device pthread-skylake-avx512-AMD EPYC failed to build the program\n";

TEST(MapKernelBuildLogTest, GivenPoclsLogItNamesTheCandidatesLinesAndShowsThem) {
  KernelSourceMap m{"scale.cpp", {20, 21, 22, 23, 24}};
  const std::string mapped = MapKernelBuildLog(kPoclLog, kKernel, m);
  EXPECT_TRUE(Contains(mapped,
                       "scale.cpp:22:16: error: expected identifier or '('\n"
                       "   22 |   float global = 1.0f;\n"
                       "      |                ^\n"))
      << mapped;
  EXPECT_TRUE(Contains(mapped, "scale.cpp:23:32: error: expected expression\n")) << mapped;
  EXPECT_TRUE(Contains(mapped, "failed to build the program")) << mapped;
  EXPECT_FALSE(Contains(mapped, "tempfile")) << mapped;
  EXPECT_FALSE(Contains(mapped, "/root")) << mapped;
}

TEST(MapKernelBuildLogTest, GivenADriverThatPrintsTheSourceLineItIsNotRepeated) {
  const std::string log =
      "<kernel>:3:16: error: expected identifier or '('\n"
      "  float global = 1.0f;\n"
      "               ^\n";
  const std::string mapped = MapKernelBuildLog(log, kKernel, {"scale.cl", {1, 2, 3, 4, 5}});
  EXPECT_EQ(mapped,
            "scale.cl:3:16: error: expected identifier or '('\n"
            "  float global = 1.0f;\n"
            "               ^\n");
}

TEST(MapKernelBuildLogTest, GivenAnUnmappedLineItSaysKernelSourceLine) {
  const std::string log =
      "/tmp/OCL1234T5.cl:3:16: error: expected identifier or '('\n/tmp/OCL1234T5.cl is gone\n";
  const std::string mapped = MapKernelBuildLog(log, kKernel, {"", std::vector<int>(5, 0)});
  EXPECT_TRUE(Contains(mapped,
                       "kernel source line 3, column 16: error: expected identifier or '('\n"
                       "    3 |   float global = 1.0f;\n"))
      << mapped;
  EXPECT_FALSE(Contains(mapped, "/tmp")) << mapped;
}

TEST(MapKernelBuildLogTest, GivenALocationInTheDriversHeaderItIsKept) {
  const std::string log = "/usr/lib/clc/opencl-c.h:1234:5: note: candidate function\n";
  EXPECT_EQ(MapKernelBuildLog(log, kKernel, {"scale.cl", {1, 2, 3, 4, 5}}), log);
}

}  // namespace
}  // namespace kforge
