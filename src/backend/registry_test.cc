// The registry's lookups over the specs: a file's fence language, C++'s code-block words.
#include "backend/registry.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kforge {
namespace {

TEST(RegistryTest, GivenAKernelFileItsFenceLanguageIsItsBackendsFirstCodeLanguage) {
  EXPECT_EQ(FenceLanguageOf("candidate.cc"), "cpp");
  EXPECT_EQ(FenceLanguageOf("kernel.cpp"), "cpp");
  EXPECT_EQ(FenceLanguageOf("kernel.cu"), "cuda");
  EXPECT_EQ(FenceLanguageOf("kernel.hip"), "hip");
  EXPECT_EQ(FenceLanguageOf("candidate.py"), "python");
}

TEST(RegistryTest, GivenASiblingKernelSourceItsFenceLanguageIsTheSiblingLanguage) {
  EXPECT_EQ(FenceLanguageOf("candidate.cl"), "opencl");
  EXPECT_EQ(FenceLanguageOf("shader.comp"), "glsl");
  EXPECT_EQ(FenceLanguageOf("SHADER.COMP"), "glsl");
}

TEST(RegistryTest, GivenAFileNoBackendTakesItsFenceLanguageIsItsExtension) {
  EXPECT_EQ(FenceLanguageOf("notes.txt"), "txt");
  EXPECT_EQ(FenceLanguageOf("Makefile"), "text");
}

TEST(RegistryTest, GivenABackendsOwnWordsTheyComeBeforeCppsAndNoneRepeats) {
  std::vector<std::string> w = CppCodeLanguages({"cuda", "cu", "cpp"});
  EXPECT_EQ(w, (std::vector<std::string>{"cuda", "cu", "cpp", "c++", "cc", "cxx", "c"}));
  EXPECT_EQ(CppCodeLanguages().front(), "cpp");
}

TEST(RegistryTest, EveryBackendsFirstExtensionMapsBackToAFenceItsExtractionAccepts) {
  for (const BackendSpec& b : Backends()) {
    ASSERT_FALSE(b.extensions.empty()) << b.name;
    const std::string lang = FenceLanguageOf(std::string("k") + b.extensions[0]);
    const BackendSpec* owner = b.python_hosted ? &b : BackendForExtension(b.extensions[0]);
    ASSERT_NE(owner, nullptr) << b.name;
    // The file's backend may be another one with the same extension (.cc: cpp, opencl and
    // vulkan hosts); every one of them accepts a C++ block.
    EXPECT_NE(std::find(b.code_languages.begin(), b.code_languages.end(), lang), b.code_languages.end())
        << b.name << " does not accept a ```" << lang << " block for its " << b.extensions[0] << " files";
    if (*b.sibling_extension) {
      const std::string sib = FenceLanguageOf(std::string("k") + b.sibling_extension);
      EXPECT_NE(std::find(b.sibling_code_languages.begin(), b.sibling_code_languages.end(), sib),
                b.sibling_code_languages.end())
          << b.name;
    }
  }
}

}  // namespace
}  // namespace kforge
