// kforge-nvcc (nvcc_lanes.h): its plan from dry runs captured from CUDA 13.0's nvcc
// (testdata/dryrun-*.txt, TMPDIR=/tmp/kforge-nvcc-TESTDIR, PATH shortened), and the program
// against nvcc itself where the toolkit is installed (compiling only; no GPU needed).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "backend/cuda/nvcc_lanes.h"
#include "base/files.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
const std::string kTmp = "/tmp/kforge-nvcc-TESTDIR";

std::string Dryrun(const std::string& name) {
  Result<std::string> text = ReadFile(fs::path(KFORGE_NVCC_TESTDATA) / name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : "";
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// What PyTorch's load_inline asks of nvcc: one .cu to an object with its dependency file.
TEST(NvccLanesTest, GivenALoadInlineCompileTheHostAndDeviceChainsSplitAtTheModuleId) {
  Result<NvccPlan> plan = PlanNvccLanes(Dryrun("dryrun-load-inline.txt"), kTmp, "cuda.cuda.o");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->host.size(), 2u);
  EXPECT_TRUE(Contains(plan->host[0].line, " -E ")) << plan->host[0].line;
  EXPECT_EQ(plan->host[1].line.rfind("cudafe++ ", 0), 0u) << plan->host[1].line;
  // cudafe++ reads the module id written beforehand instead of writing its own.
  EXPECT_FALSE(Contains(plan->host[1].line, "--gen_module_id_file"));
  EXPECT_TRUE(Contains(plan->host[1].line, plan->module_id_file));
  ASSERT_EQ(plan->device.size(), 5u);
  EXPECT_TRUE(Contains(plan->device[0].line, " -E "));
  EXPECT_TRUE(Contains(plan->device[1].line, "cicc"));
  EXPECT_TRUE(Contains(plan->device[1].line, plan->module_id_file));
  EXPECT_EQ(plan->device[2].line.rfind("ptxas ", 0), 0u);
  EXPECT_EQ(plan->device[3].line.rfind("fatbinary ", 0), 0u);
  EXPECT_EQ(plan->device[4].line.rfind("rm -f ", 0), 0u) << plan->device[4].line;
  ASSERT_EQ(plan->final.size(), 1u);
  EXPECT_TRUE(Contains(plan->final[0].line, "cudafe1.cpp") && Contains(plan->final[0].line, " -c ")) << plan->final[0].line;
  EXPECT_EQ(plan->module_id_file.rfind(kTmp + "/", 0), 0u);
  EXPECT_EQ(plan->source_name, "cuda.cu");
  EXPECT_EQ(plan->depfile, "cuda.cuda.o.d");
  EXPECT_EQ(plan->dep_target, "cuda.cuda.o");
  ASSERT_EQ(plan->preprocessed.size(), 2u);  // the host's, then the device's
  EXPECT_TRUE(Contains(plan->preprocessed[0], "cpp4.ii")) << plan->preprocessed[0];
  EXPECT_TRUE(Contains(plan->preprocessed[1], "cpp1.ii")) << plan->preprocessed[1];
  // The profile's variables reach every step: cicc is named through $CICC_PATH, and finds
  // libdevice through NVVMIR_LIBRARY_DIR.
  std::set<std::string> names;
  for (const auto& [name, value] : plan->env) names.insert(name);
  EXPECT_TRUE(names.count("CICC_PATH") && names.count("NVVMIR_LIBRARY_DIR") && names.count("PATH"));
}

TEST(NvccLanesTest, GivenTwoArchitecturesBothDeviceChainsRunInTheDeviceLane) {
  Result<NvccPlan> plan = PlanNvccLanes(Dryrun("dryrun-two-archs.txt"), kTmp, "/tmp/gelu.o");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  int cicc = 0, ptxas = 0;
  for (const NvccStep& s : plan->device) {
    cicc += Contains(s.line, "/cicc\"");
    ptxas += s.line.rfind("ptxas ", 0) == 0;
  }
  EXPECT_EQ(cicc, 2);
  EXPECT_EQ(ptxas, 2);
  EXPECT_TRUE(plan->depfile.empty());
  EXPECT_TRUE(plan->preprocessed.empty());
}

// The cuda backend's build of a shared library: the device link and the link follow the host
// compile, in nvcc's order.
TEST(NvccLanesTest, GivenASharedLibraryTheLinkStepsStayAfterTheHostCompile) {
  Result<NvccPlan> plan = PlanNvccLanes(Dryrun("dryrun-shared.txt"), kTmp, "/tmp/gelu.so");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->final.size(), 6u);
  EXPECT_TRUE(Contains(plan->final[0].line, "cudafe1.cpp"));
  EXPECT_EQ(plan->final[1].line.rfind("nvlink ", 0), 0u);
  EXPECT_EQ(plan->final[5].line.rfind("g++ ", 0), 0u);
  EXPECT_EQ(plan->source_name, "seeds/naive_cuda.cu");
}

TEST(NvccLanesTest, GivenADryRunItDoesNotKnowThereIsNoPlan) {
  const std::string good = Dryrun("dryrun-load-inline.txt");
  // A step of an unknown tool before the host compile.
  std::string unknown = good;
  unknown.insert(unknown.find("#$ ptxas"), "#$ sometool " + kTmp + "/x.ptx\n");
  Result<NvccPlan> a = PlanNvccLanes(unknown, kTmp, "cuda.cuda.o");
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(Contains(a.status().message(), "sometool")) << a.status().message();
  // Two sources: two cudafe++ steps.
  std::string two = good;
  const size_t fe = two.find("#$ cudafe++");
  two.insert(fe, two.substr(fe, two.find('\n', fe) - fe + 1));
  EXPECT_FALSE(PlanNvccLanes(two, kTmp, "cuda.cuda.o").ok());
  // A device step that reads what the host chain writes (its preprocessed source).
  std::string crossed = good;
  const size_t ptxas = crossed.find("#$ ptxas");
  const std::string ii = crossed.substr(crossed.find(kTmp, crossed.find("--module_id_file_name") + 30));
  crossed.insert(ptxas, "#$ ptxas " + ii.substr(0, ii.find('"')) + "\n");
  Result<NvccPlan> c = PlanNvccLanes(crossed, kTmp, "cuda.cuda.o");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "host chain")) << c.status().message();
  // Intermediate files elsewhere than the private folder nvcc was given; text that is no step.
  EXPECT_FALSE(PlanNvccLanes(good, "/tmp/elsewhere", "cuda.cuda.o").ok());
  EXPECT_FALSE(PlanNvccLanes("nvcc fatal   : Unknown option '-foo'\n", kTmp, "x.o").ok());
  // A dependency file needs the rule's target.
  EXPECT_FALSE(PlanNvccLanes(good, kTmp, "").ok());
}

TEST(NvccLanesTest, GivenArgumentsNvccAloneHandlesThePlainNvccIsRun) {
  EXPECT_FALSE(NvccArgsNeedPlainNvcc({"-c", "a.cu", "-o", "a.o", "-Xptxas", "-v", "-rdc=false"}));
  EXPECT_FALSE(NvccArgsNeedPlainNvcc({"--generate-dependencies-with-compile", "--dependency-output", "a.o.d", "-c", "a.cu"}));
  EXPECT_FALSE(NvccArgsNeedPlainNvcc({"-o", "-E", "a.cu"}));  // an output named -E
  for (const char* a : {"-E", "-M", "-v", "--dryrun", "-keep", "-rdc=true", "-dc", "--version", "-ptx", "-G", "--keep-dir=/x"})
    EXPECT_TRUE(NvccArgsNeedPlainNvcc({"-c", "a.cu", a})) << a;
}

TEST(NvccLanesTest, GivenASourceTheModuleIdHasNvccsFormAndItsOwnDigest) {
  const std::string a = ModuleIdFor("cuda.cu", "one"), b = ModuleIdFor("cuda.cu", "two");
  EXPECT_TRUE(std::regex_match(a, std::regex("_[0-9a-f]{8}_7_cuda_cu_[0-9a-f]{8}"))) << a;
  EXPECT_NE(a, b);
  EXPECT_EQ(a, ModuleIdFor("cuda.cu", "one"));
  EXPECT_TRUE(std::regex_match(ModuleIdFor("my-dir/k 1.cu", "x"), std::regex("_[0-9a-f]{8}_13_my_dir_k_1_cu_[0-9a-f]{8}")));
}

TEST(NvccLanesTest, GivenPreprocessedTextsTheDependencyRuleNamesEachFileOnce) {
  const std::string host = "# 0 \"cuda.cu\"\n# 0 \"<built-in>\"\n# 0 \"<command-line>\"\n# 1 \"/usr/include/a.h\" 1 3 4\n"
                           "int x;\n# 2 \"cuda.cu\" 2\n# 1 \"/opt/my dir/b$.h\" 1\n#pragma once\n# 7 \"we\\\"ird.h\"\n";
  const std::string device = "# 1 \"cuda.cu\"\n# 1 \"/usr/include/a.h\" 1\n# 1 \"/usr/include/dev.h\" 1\n";
  EXPECT_EQ(DepfileFromPreprocessed("out dir/cuda.o", {host, device}),
            "out\\ dir/cuda.o : \\\n    cuda.cu \\\n    /usr/include/a.h \\\n    /opt/my\\ dir/b$$.h \\\n    we\"ird.h \\\n"
            "    /usr/include/dev.h\n");
}

TEST(NvccLanesTest, GivenQuotedWordsTheyAreSplitAsTheShellWould) {
  EXPECT_EQ(ShellWords(R"("$CICC_PATH/cicc" -D'a b' "x\"y" c\ d  --e="f g")"),
            (std::vector<std::string>{"$CICC_PATH/cicc", "-Da b", "x\"y", "c d", "--e=f g"}));
}

// --- kforge-nvcc against nvcc ---------------------------------------------------------------

std::string FindNvcc() {
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (fs::exists(p)) return p;
  return "";
}

struct Outcome {
  int rc = -1;
  std::string err;
};

// `program args` in `dir`, stderr captured; env is a prefix of assignments.
Outcome Sh(const fs::path& dir, const std::string& env, const std::string& program, const std::string& args) {
  const fs::path err = dir / "stderr.txt";
  const std::string cmd = "cd '" + dir.string() + "' && env " + env + " '" + program + "' " + args + " 2>'" + err.string() + "'";
  Outcome r;
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  Result<std::string> text = ReadFile(err);
  if (text.ok()) r.err = *text;
  return r;
}

std::string Capture(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  pclose(f);
  return out;
}

// The names an object defines, without those derived from the module id or nvcc's file names.
std::set<std::string> DefinedNames(const fs::path& object) {
  std::set<std::string> names;
  std::istringstream in(Capture("nm --defined-only '" + object.string() + "'"));
  for (std::string line; std::getline(in, line);) {
    const std::string name = line.substr(line.rfind(' ') + 1);
    if (!Contains(name, "_INTERNAL_") && !Contains(name, "tmpxft") && !Contains(name, "_GLOBAL__")) names.insert(name);
  }
  return names;
}

std::set<std::string> DepfileNames(const fs::path& file) {
  std::set<std::string> names;
  Result<std::string> text = ReadFile(file);
  if (!text.ok()) return names;
  std::istringstream in(*text);
  std::string word;
  in >> word >> word;  // the target and ':'
  while (in >> word)
    if (word != "\\") names.insert(fs::path(word).lexically_normal().string());
  return names;
}

class NvccProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nvcc_ = FindNvcc();
    if (nvcc_.empty()) GTEST_SKIP() << "nvcc is not installed here";
    dir_ = MakeScratchDir("nvcc-lanes").value();
    fs::create_directories(dir_ / "tmp");
    env_ = "KFORGE_REAL_NVCC='" + nvcc_ + "' TMPDIR='" + (dir_ / "tmp").string() + "'";
    ASSERT_TRUE(WriteFileAtomic(dir_ / "scale.h", "#pragma once\nconstexpr float kScale = 2.0f;\n").ok());
  }
  void Source(const std::string& name, const std::string& text) { ASSERT_TRUE(WriteFileAtomic(dir_ / name, text).ok()); }
  Outcome Wrapper(const std::string& args) { return Sh(dir_, env_, KFORGE_NVCC_WRAPPER, args); }
  Outcome Plain(const std::string& args) { return Sh(dir_, env_ + " KFORGE_NVCC_LANES=0", KFORGE_NVCC_WRAPPER, args); }

  std::string nvcc_, env_;
  fs::path dir_;
};

// An internal-linkage device variable: its device name carries the module id, and the host
// registers it under that name, so host and device code must agree on the id.
const char kKernel[] = R"(#include "scale.h"
namespace { __device__ float g_offset = 0.5f; }
__device__ float g_bias = 1.0f;
__global__ void scale(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * kScale + g_bias + g_offset;
}
void launch_scale(const float* x, float* y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }
)";

TEST_F(NvccProgramTest, GivenOneSourceTheObjectDefinesWhatNvccsDoesAndTheDependenciesCoverNvccs) {
  Source("k.cu", kKernel);
  const std::string args = "--generate-dependencies-with-compile --dependency-output {0}.o.d -gencode=arch=compute_90,code=sm_90 -c k.cu -o {0}.o";
  Outcome plain = Plain(std::regex_replace(args, std::regex("\\{0\\}"), "plain"));
  ASSERT_EQ(plain.rc, 0) << plain.err;
  Outcome lanes = Wrapper("--generate-dependencies-with-compile --dependency-output lanes.o.d -gencode=arch=compute_90,code=sm_90 -c k.cu -o lanes.o");
  ASSERT_EQ(lanes.rc, 0) << lanes.err;
  EXPECT_EQ(DefinedNames(dir_ / "lanes.o"), DefinedNames(dir_ / "plain.o"));
  EXPECT_FALSE(DefinedNames(dir_ / "lanes.o").empty());
  // The module id is kforge-nvcc's (nvcc's ends in the first external name), in the device
  // code's name of g_offset and in the host's registration of it alike.
  const std::string strings = Capture("strings -a '" + (dir_ / "lanes.o").string() + "'");
  const std::regex id("_INTERNAL_[0-9a-f]{8}_4_k_cu_[0-9a-f]{8}[0-9]+_GLOBAL__N__[0-9a-f]{8}_4_k_cu_[0-9a-f]{8}8g_offsetE");
  EXPECT_GE(std::distance(std::sregex_iterator(strings.begin(), strings.end(), id), std::sregex_iterator()), 2) << strings;
  std::set<std::string> nvcc_deps = DepfileNames(dir_ / "plain.o.d"), our_deps = DepfileNames(dir_ / "lanes.o.d");
  ASSERT_FALSE(nvcc_deps.empty());
  EXPECT_TRUE(our_deps.count("scale.h"));
  for (const std::string& f : nvcc_deps) EXPECT_TRUE(our_deps.count(f)) << f << " is in nvcc's dependencies only";
  // Nothing is left in the temporary folder.
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
}

TEST_F(NvccProgramTest, GivenAnErrorInTheSourceItIsReportedOnceAndTheExitCodeIsNvccs) {
  Source("bad.cu", std::string(kKernel) + "int broken( { return 0; }\n");
  Outcome plain = Plain("-c bad.cu -o plain.o");
  Outcome lanes = Wrapper("-c bad.cu -o lanes.o");
  ASSERT_NE(plain.rc, 0);
  EXPECT_EQ(lanes.rc, plain.rc) << lanes.err;
  const std::regex error("bad\\.cu\\([0-9]+\\): error");
  const auto count = [&](const std::string& s) { return std::distance(std::sregex_iterator(s.begin(), s.end(), error), std::sregex_iterator()); };
  EXPECT_GE(count(plain.err), 1) << plain.err;
  EXPECT_EQ(count(lanes.err), count(plain.err)) << lanes.err;
  EXPECT_FALSE(fs::exists(dir_ / "lanes.o"));
}

TEST_F(NvccProgramTest, GivenAnErrorOnlyTheDeviceCompileFindsItFails) {
  Source("host_call.cu", "int host_only() { return 1; }\n__global__ void k(int* y) { *y = host_only(); }\n");
  Outcome plain = Plain("-c host_call.cu -o plain.o");
  Outcome lanes = Wrapper("-c host_call.cu -o lanes.o");
  ASSERT_NE(plain.rc, 0) << plain.err;
  EXPECT_NE(lanes.rc, 0);
  EXPECT_TRUE(Contains(lanes.err, "host_only")) << lanes.err;
}

// The cuda backend's flags: a shared library, ptxas's report on stderr as under nvcc.
TEST_F(NvccProgramTest, GivenTheCudaBackendsFlagsTheLibraryLinksAndPtxasReports) {
  Source("k.cu", std::string(kKernel) + "extern \"C\" __attribute__((visibility(\"default\"))) void run(const float* x, float* y, int n) { launch_scale(x, y, n); }\n");
  Outcome lanes = Wrapper("-std=c++20 -O3 -shared -Xcompiler -fPIC,-fvisibility=hidden -arch=sm_90 -lineinfo -Xptxas -v k.cu -o k.so");
  ASSERT_EQ(lanes.rc, 0) << lanes.err;
  EXPECT_TRUE(Contains(lanes.err, "ptxas info")) << lanes.err;
  EXPECT_TRUE(Contains(Capture("nm -D --defined-only '" + (dir_ / "k.so").string() + "'"), " run")) << "run is not exported";
}

TEST_F(NvccProgramTest, GivenWhatOnlyNvccDoesItRunsNvccItself) {
  Source("k.cu", kKernel);
  Outcome lanes = Sh(dir_, env_ + " KFORGE_NVCC_VERBOSE=1", KFORGE_NVCC_WRAPPER, "-E k.cu -o k.ii");
  ASSERT_EQ(lanes.rc, 0) << lanes.err;
  EXPECT_TRUE(Contains(lanes.err, "plain nvcc")) << lanes.err;
  EXPECT_TRUE(fs::exists(dir_ / "k.ii"));
  // nvcc's own flag variables may hold anything (-v, --dryrun): nvcc alone reads them.
  Outcome appended = Sh(dir_, env_ + " KFORGE_NVCC_VERBOSE=1 NVCC_APPEND_FLAGS=-v", KFORGE_NVCC_WRAPPER, "-c k.cu -o k.o");
  ASSERT_EQ(appended.rc, 0) << appended.err;
  EXPECT_TRUE(Contains(appended.err, "NVCC_APPEND_FLAGS is set")) << appended.err;
  EXPECT_TRUE(Contains(appended.err, "cicc")) << "nvcc -v lists its steps";
}

TEST_F(NvccProgramTest, GivenNoUsableNvccItSaysWhatToSet) {
  Source("k.cu", kKernel);
  Outcome missing = Sh(dir_, "KFORGE_REAL_NVCC=/nonexistent/nvcc", KFORGE_NVCC_WRAPPER, "-c k.cu -o k.o");
  EXPECT_EQ(missing.rc, 127);
  EXPECT_TRUE(Contains(missing.err, "KFORGE_REAL_NVCC='/nonexistent/nvcc' is not an executable")) << missing.err;
  // Pointed at itself it would run itself for ever.
  Outcome self = Sh(dir_, std::string("KFORGE_REAL_NVCC='") + KFORGE_NVCC_WRAPPER + "'", KFORGE_NVCC_WRAPPER, "-c k.cu -o k.o");
  EXPECT_EQ(self.rc, 127);
  EXPECT_TRUE(Contains(self.err, "is kforge-nvcc itself")) << self.err;
  // A name is looked up on PATH.
  Outcome named = Sh(dir_, "KFORGE_REAL_NVCC=nvcc PATH=" + fs::path(nvcc_).parent_path().string() + ":/usr/bin:/bin",
                     KFORGE_NVCC_WRAPPER, "-c k.cu -o k.o");
  EXPECT_EQ(named.rc, 0) << named.err;
}

TEST_F(NvccProgramTest, GivenADependencyFileWithABlankInItsNameItIsWrittenThere) {
  Source("k.cu", kKernel);
  Outcome lanes = Wrapper("--generate-dependencies-with-compile --dependency-output 'o ut.o.d' -c k.cu -o 'o ut.o'");
  ASSERT_EQ(lanes.rc, 0) << lanes.err;
  EXPECT_TRUE(DepfileNames(dir_ / "o ut.o.d").count("scale.h"));
  EXPECT_FALSE(fs::exists(dir_ / "o"));
}

// Signals reach the steps: nothing of the build outlives kforge-nvcc, killed or ended.
TEST_F(NvccProgramTest, GivenASignalOrAKillNoStepOutlivesIt) {
  Source("k.cu", std::string("#include <cuda/std/complex>\n") + kKernel);  // a front end that takes a while
  const fs::path tmp = dir_ / "tmp";
  for (const char* sig : {"TERM", "KILL"}) {
    const fs::path script = dir_ / "signal.sh";
    ASSERT_TRUE(WriteFileAtomic(script, "cd '" + dir_.string() + "' && env " + env_ + " '" + KFORGE_NVCC_WRAPPER +
                                            "' -c k.cu -o k.o 2>/dev/null &\npid=$!\nsleep 0.6\nkill -" + sig +
                                            " $pid\nwait $pid\necho $?\n").ok());
    const std::string status = Capture("bash '" + script.string() + "'");
    EXPECT_EQ(status, std::string(sig) == "TERM" ? "143\n" : "137\n") << sig;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    // The bracket keeps the pattern from matching the shell that runs pgrep.
    EXPECT_EQ(Capture("pgrep -f '" + tmp.string() + "/kforge-nvcc[-]' | wc -l"), "0\n") << sig << ": steps still run";
    if (std::string(sig) == "TERM") EXPECT_TRUE(fs::is_empty(tmp)) << "SIGTERM left the temporary folder";
  }
}

}  // namespace
}  // namespace kforge
