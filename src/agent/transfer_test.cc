// Specifications of cross-backend transfer's kernel reading (agent/transfer.h): which backend a
// file is for, which files make the kernel, the errors, and how the generation prompt shows it.
// The kernels are the bundled ones (problems/gelu); the odd cases are written to a scratch folder.
#include "agent/transfer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "agent/generator.h"
#include "base/files.h"
#include "kforge/problem.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const fs::path kGelu = fs::path(KFORGE_PROBLEMS_DIR) / "gelu";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Read(const fs::path& p) {
  Result<std::string> text = ReadFile(p);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

// The backend inferred for `file`, or "error: <message>".
std::string Inferred(const fs::path& file) {
  Result<const BackendSpec*> b = ResolveTransferBackend(file, "");
  return b.ok() ? std::string((*b)->name) : "error: " + b.status().message();
}

// A fresh folder for files the bundled problems do not have, removed at the end of the test.
struct Scratch {
  explicit Scratch(const std::string& tag) {
    Result<fs::path> dir = MakeScratchDir("transfer-test-" + tag);
    EXPECT_TRUE(dir.ok()) << dir.status().ToString();
    if (dir.ok()) path = *dir;
  }
  ~Scratch() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
  fs::path path;
};

void Write(const fs::path& p, const std::string& text) {
  ASSERT_TRUE(WriteFileAtomic(p, text).ok()) << p;
}

TEST(TransferBackendTest, GivenCudaAndHipFilesTheBackendIsTheOneTakingTheExtension) {
  EXPECT_EQ(Inferred(kGelu / "seeds" / "naive_cuda.cu"), "cuda");
  EXPECT_EQ(Inferred(kGelu / "candidates" / "vec4_hip.hip"), "hip");
}

TEST(TransferBackendTest, GivenALauncherWithItsKernelSourceBesideItTheBackendIsTheSiblings) {
  // .cpp alone would be cpp's: the .cl or .comp beside it says which launcher it is.
  EXPECT_EQ(Inferred(kGelu / "seeds" / "naive_opencl.cpp"), "opencl");
  EXPECT_EQ(Inferred(kGelu / "seeds" / "naive_vulkan.cpp"), "vulkan");
  EXPECT_EQ(Inferred(kGelu / "candidates" / "omp_simd.cc"), "cpp");
}

TEST(TransferBackendTest, GivenAKernelSourceItsExtensionNamesTheBackend) {
  EXPECT_EQ(Inferred(kGelu / "seeds" / "naive_opencl.cl"), "opencl");
  EXPECT_EQ(Inferred(kGelu / "candidates" / "vec4_vulkan.comp"), "vulkan");
}

TEST(TransferBackendTest, GivenANamedBackendItWinsAndAnUnknownOneListsTheBackends) {
  Result<const BackendSpec*> named =
      ResolveTransferBackend(kGelu / "seeds" / "naive_cuda.cu", "hip");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_STREQ((*named)->name, "hip");
  Result<const BackendSpec*> unknown =
      ResolveTransferBackend(kGelu / "seeds" / "naive_cuda.cu", "metal");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(unknown.status().message(), "unknown --transfer-backend 'metal'"))
      << unknown.status().message();
  EXPECT_TRUE(Contains(unknown.status().message(), BackendNames())) << unknown.status().message();
}

TEST(TransferBackendTest, GivenAPythonModuleItAsksWhichPythonBackend) {
  Scratch dir("py");
  Write(dir / "model_new.py", "class ModelNew: pass\n");
  const std::string got = Inferred(dir / "model_new.py");
  EXPECT_TRUE(Contains(got, "error: ")) << got;
  EXPECT_TRUE(Contains(got, "could be a kernel for ")) << got;
  // Every Python-hosted backend is named (read from the registry: triton, pytorch, ...).
  for (const BackendSpec& b : Backends())
    if (b.python_hosted) EXPECT_TRUE(Contains(got, b.name)) << b.name << " missing from: " << got;
  EXPECT_TRUE(Contains(got, "--transfer-backend")) << got;
}

TEST(TransferBackendTest, GivenALauncherWithBothAClAndACompBesideItItAsksForTheBackend) {
  Scratch dir("both");
  for (const char* name : {"k.cpp", "k.cl", "k.comp"}) Write(dir / name, "// kernel\n");
  const std::string got = Inferred(dir / "k.cpp");
  EXPECT_TRUE(Contains(got, "could be a kernel for opencl or vulkan")) << got;
  EXPECT_TRUE(Contains(got, "--transfer-backend")) << got;
}

TEST(TransferBackendTest, GivenAnExtensionNoBackendTakesItAsksForTheBackend) {
  const std::string got = Inferred("kernel.metal");
  EXPECT_TRUE(Contains(got, "no backend takes files ending in '.metal'")) << got;
  EXPECT_TRUE(Contains(got, BackendNames())) << got;
}

TEST(TransferKernelTest, GivenAnOpenClClFileTheLauncherBesideItComesFirst) {
  Result<TransferKernel> k = LoadTransferKernel(kGelu / "seeds" / "naive_opencl.cl", "");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_STREQ(k->source->name, "opencl");
  ASSERT_EQ(k->files.size(), 2u);
  EXPECT_EQ(k->files[0].path.filename(), "naive_opencl.cpp");
  EXPECT_EQ(k->files[0].language, "cpp");
  EXPECT_EQ(k->files[0].text, Read(kGelu / "seeds" / "naive_opencl.cpp"));
  EXPECT_EQ(k->files[1].path.filename(), "naive_opencl.cl");
  EXPECT_EQ(k->files[1].language, "opencl");
  EXPECT_EQ(k->files[1].text, Read(kGelu / "seeds" / "naive_opencl.cl"));
}

TEST(TransferKernelTest, GivenAVulkanLauncherItsShaderComesWithItAsGlsl) {
  Result<TransferKernel> k = LoadTransferKernel(kGelu / "candidates" / "vec4_vulkan.cpp", "");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_EQ(k->files.size(), 2u);
  EXPECT_EQ(k->files[1].path.filename(), "vec4_vulkan.comp");
  EXPECT_EQ(k->files[1].language, "glsl");
  EXPECT_EQ(k->files[1].text, Read(kGelu / "candidates" / "vec4_vulkan.comp"));
}

TEST(TransferKernelTest, GivenACudaFileItIsTheWholeKernel) {
  Result<TransferKernel> k = LoadTransferKernel(kGelu / "seeds" / "naive_cuda.cu", "");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_EQ(k->files.size(), 1u);
  EXPECT_EQ(k->files[0].language, "cuda");
  EXPECT_EQ(k->files[0].text, Read(kGelu / "seeds" / "naive_cuda.cu"));
}

TEST(TransferKernelTest, GivenAMissingFileItIsNotFoundAndSaysWhatToGive) {
  Result<TransferKernel> k = LoadTransferKernel(kGelu / "seeds" / "no_such_kernel.cu", "");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(k.status().message(), "no_such_kernel.cu: no such file"))
      << k.status().message();
  EXPECT_TRUE(Contains(k.status().message(), "e.g. problems/gelu/seeds/naive_cuda.cu"))
      << k.status().message();
}

TEST(TransferKernelTest, GivenALauncherNamedOpenClWithoutItsClTheErrorNamesTheMissingFile) {
  Scratch dir("nocl");
  Write(dir / "launcher.cpp", "extern \"C\" int kf_cl_run() { return 0; }\n");
  Result<TransferKernel> k = LoadTransferKernel(dir / "launcher.cpp", "opencl");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(
      Contains(k.status().message(), (dir.path / "launcher.cl").string() + " does not exist"))
      << k.status().message();
  EXPECT_TRUE(Contains(k.status().message(), "put it there")) << k.status().message();
}

TEST(TransferKernelTest, GivenAKernelSourceWithoutALauncherItAsksForTheLauncher) {
  Scratch dir("nolauncher");
  Write(dir / "shader.comp", "#version 450\nvoid main() {}\n");
  Result<TransferKernel> k = LoadTransferKernel(dir / "shader.comp", "");
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(Contains(k.status().message(), "no launcher (shader.cpp) is beside it"))
      << k.status().message();
  EXPECT_TRUE(Contains(k.status().message(), "kf_vk_run")) << k.status().message();
}

TEST(TransferKernelTest, GivenAnEmptyFileOrAFolderItIsRefused) {
  Scratch dir("empty");
  Write(dir / "empty.cu", "\n  \n");
  Result<TransferKernel> empty = LoadTransferKernel(dir / "empty.cu", "");
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(Contains(empty.status().message(), "is empty")) << empty.status().message();
  fs::create_directories(dir / "folder.cu");
  Result<TransferKernel> folder = LoadTransferKernel(dir / "folder.cu", "");
  ASSERT_FALSE(folder.ok());
  EXPECT_TRUE(Contains(folder.status().message(), "is not a file")) << folder.status().message();
}

TEST(TransferPromptTest,
     GivenAnOpenClKernelForCudaEachFileIsFencedUnderItsLabelWithBothEntryPoints) {
  Result<TransferKernel> k = LoadTransferKernel(kGelu / "seeds" / "naive_opencl.cpp", "");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  const std::string text = TransferPromptText(*k, *FindBackend("cuda"));
  const std::string host =
      "`naive_opencl.cpp`:\n\n```cpp\n" + Read(kGelu / "seeds" / "naive_opencl.cpp") + "```\n";
  const std::string program =
      "`naive_opencl.cl`:\n\n```opencl\n" + Read(kGelu / "seeds" / "naive_opencl.cl") + "```\n";
  EXPECT_TRUE(Contains(text, host)) << text;
  EXPECT_TRUE(Contains(text, program)) << text;
  EXPECT_LT(text.find(host), text.find(program));
  EXPECT_TRUE(Contains(text, "This `opencl` kernel exports `kf_cl_run`")) << text;
  EXPECT_TRUE(Contains(
      text,
      "your `cuda` kernel must export `kf_cuda_run` instead, as the `cuda` ABI above defines it"))
      << text;
}

// In the whole generation prompt the kernel's blocks stand alone (not inside another fence), once.
TEST(TransferPromptTest, GivenATransferKernelTheGenerationPromptCarriesItOnceUnderTheSection) {
  Result<fs::path> file = FindProblem("gelu");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Result<Problem> p = LoadProblem(*file);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Result<TransferKernel> k = LoadTransferKernel(kGelu / "seeds" / "naive_cuda.cu", "");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  GenerationContext c;
  c.problem = &*p;
  c.backend = "hip";
  c.task = "first";
  c.transfer = TransferPromptText(*k, *FindBackend("hip"));
  c.transfer_backend = "cuda";
  Result<llm::ChatRequest> r = BuildGenerationRequest(c);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string user = r->messages.at(0).parts.at(0).text;
  const std::string block = "```cuda\n" + Read(kGelu / "seeds" / "naive_cuda.cu") + "```\n";
  EXPECT_TRUE(Contains(user, "## A working implementation for another backend (cuda)")) << user;
  ASSERT_TRUE(Contains(user, "`naive_cuda.cu`:\n\n" + block)) << user;
  EXPECT_EQ(user.find(block), user.rfind(block));
  // Right under the section's first line: not inside another fence.
  EXPECT_TRUE(Contains(user, "keep this backend's ABI.\n\n`naive_cuda.cu`:\n\n```cuda\n")) << user;
  EXPECT_TRUE(Contains(user, "`kf_hip_run`")) << user;
}

}  // namespace
}  // namespace kforge
