// Specifications of ProblemSearchPath, FindProblem and ListBundledProblems. The search roots
// are testdata/search/first and testdata/search/second, put on KFORGE_PROBLEMS.
#include <gtest/gtest.h>
#include "kforge/source_dir.h"

#include <cstdlib>
#include <optional>

#include "kforge/problem.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const fs::path kSearch = fs::path(KFORGE_PROBLEM_TESTDATA) / "search";

// Sets KFORGE_PROBLEMS for one test and restores the previous value afterwards.
class FindProblemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* old = std::getenv("KFORGE_PROBLEMS")) saved_ = old;
    SetSearchPath((kSearch / "first").string() + ":" + (kSearch / "second").string());
  }
  void TearDown() override {
    if (saved_) {
      setenv("KFORGE_PROBLEMS", saved_->c_str(), 1);
    } else {
      unsetenv("KFORGE_PROBLEMS");
    }
  }
  void SetSearchPath(const std::string& value) { setenv("KFORGE_PROBLEMS", value.c_str(), 1); }

  std::optional<std::string> saved_;
};

TEST_F(FindProblemTest, TheSearchPathIsTheEnvironmentThenInstalledThenSourceProblems) {
  SetSearchPath((kSearch / "first").string() + "::" + (kSearch / "second").string() + ":" +
                (kSearch / "first").string());
  std::vector<fs::path> path = ProblemSearchPath();
  ASSERT_EQ(path.size(), 4u);  // empty and repeated entries are dropped
  EXPECT_EQ(path[0], (kSearch / "first").lexically_normal());
  EXPECT_EQ(path[1], (kSearch / "second").lexically_normal());
  EXPECT_EQ(path[2].filename(), "problems");
  EXPECT_NE(path[2].string().find("share/kforge/problems"), std::string::npos);
  EXPECT_EQ(path[3], (fs::path(KFORGE_SOURCE_DIR) / "problems").lexically_normal());
}

TEST_F(FindProblemTest, GivenNoEnvironmentItSearchesOnlyTheInstalledAndSourceFolders) {
  unsetenv("KFORGE_PROBLEMS");
  EXPECT_EQ(ProblemSearchPath().size(), 2u);
}

TEST_F(FindProblemTest, GivenAFilePathItReturnsIt) {
  std::string file = (kSearch / "second" / "kf-test-delta" / "problem.toml").string();
  Result<fs::path> found = FindProblem(file);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, file);
}

TEST_F(FindProblemTest, GivenAFolderItReturnsItsProblemFile) {
  fs::path folder = kSearch / "second" / "kf-test-delta";
  Result<fs::path> found = FindProblem(folder.string());
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, folder / "problem.toml");
}

TEST_F(FindProblemTest, GivenANameItFindsTheFirstProblemWithThatName) {
  Result<fs::path> found = FindProblem("kf-test-alpha");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, (kSearch / "first" / "kf-test-alpha" / "problem.toml").lexically_normal());
  found = FindProblem("kf-test-delta");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, (kSearch / "second" / "kf-test-delta" / "problem.toml").lexically_normal());
}

TEST_F(FindProblemTest, GivenANameItMatchesTheFilesNameNotTheFolders) {
  Result<fs::path> found = FindProblem("kf-test-gamma");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->parent_path().filename(), "renamed-folder");
  EXPECT_FALSE(FindProblem("renamed-folder").ok());
}

TEST_F(FindProblemTest, GivenANameInAGroupFolderItFindsIt) {
  Result<fs::path> found = FindProblem("kf-test-beta");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->parent_path().parent_path().filename(), "group");
}

TEST_F(FindProblemTest, GivenAFileThatDoesNotParseItIsFoundByItsFolderName) {
  Result<fs::path> found = FindProblem("kf-test-broken");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_FALSE(LoadProblem(*found).ok());
}

TEST_F(FindProblemTest, GivenAnUnknownNameItSaysWhereItLookedAndHowToList) {
  Result<fs::path> found = FindProblem("kf-test-nothing");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  const std::string& message = found.status().message();
  EXPECT_EQ(message.rfind("no problem named 'kf-test-nothing' (looked in ", 0), 0u) << message;
  EXPECT_NE(message.find((kSearch / "first").lexically_normal().string()), std::string::npos);
  EXPECT_NE(message.find((kSearch / "second").lexically_normal().string()), std::string::npos);
  EXPECT_NE(message.find("share/kforge/problems (missing)"), std::string::npos) << message;
  EXPECT_NE(message.find("`kforge problems`"), std::string::npos);
}

TEST_F(FindProblemTest, GivenAPathThatDoesNotExistItDoesNotSearchByName) {
  Result<fs::path> found = FindProblem("no/such/problem.toml");
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(found.status().message(),
            "no problem file or folder 'no/such/problem.toml'; expected a problem.toml, a folder "
            "holding one, or a problem name; run `kforge problems` to list them, or give the "
            "path of a problem.toml or its folder");
}

TEST_F(FindProblemTest, ListingIsSortedByNameAndListsAShadowedNameOnce) {
  std::vector<fs::path> listed;
  for (const fs::path& file : ListBundledProblems()) {
    if (file.string().rfind(kSearch.lexically_normal().string(), 0) == 0) {
      listed.push_back(fs::relative(file, kSearch));
    }
  }
  EXPECT_EQ(listed, (std::vector<fs::path>{
                        "first/kf-test-alpha/problem.toml",
                        "first/group/kf-test-beta/problem.toml",
                        "first/kf-test-broken/problem.toml",
                        "second/kf-test-delta/problem.toml",
                        "first/renamed-folder/problem.toml",
                    }));
}

}  // namespace
}  // namespace kforge
