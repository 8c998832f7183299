#include "report/line_diff.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

std::string Render(const std::vector<DiffLine>& diff) {
  std::string out;
  for (const DiffLine& d : diff) out += std::string(1, d.op) + d.text + "\n";
  return out;
}

TEST(LineDiffTest, GivenEqualTextsEveryLineIsCommonAndThereIsNoHunk) {
  std::vector<DiffLine> d = LineDiff("a\nb\nc\n", "a\nb\nc\n");
  EXPECT_EQ(Render(d), " a\n b\n c\n");
  EXPECT_TRUE(Hunks(d).empty());
  EXPECT_EQ(CountChanges(d).added, 0);
}

TEST(LineDiffTest, GivenAChangedLineItIsRemovedThenAdded) {
  std::vector<DiffLine> d = LineDiff("int x = 1;\nreturn x;\n", "int x = 2;\nreturn x;\n");
  EXPECT_EQ(Render(d), "-int x = 1;\n+int x = 2;\n return x;\n");
  DiffStat s = CountChanges(d);
  EXPECT_EQ(s.added, 1);
  EXPECT_EQ(s.removed, 1);
}

TEST(LineDiffTest, GivenInsertionsAndDeletionsInTheMiddleItKeepsTheLongestCommonLines) {
  std::vector<DiffLine> d = LineDiff("a\nb\nc\nd\ne\n", "a\nc\nx\nd\ne\ny\n");
  EXPECT_EQ(Render(d), " a\n-b\n c\n+x\n d\n e\n+y\n");
}

TEST(LineDiffTest, GivenEmptyTextsEverythingIsAddedOrRemoved) {
  EXPECT_EQ(Render(LineDiff("", "a\nb")), "+a\n+b\n");
  EXPECT_EQ(Render(LineDiff("a\n", "")), "-a\n");
  EXPECT_TRUE(LineDiff("", "").empty());
}

TEST(LineDiffTest, GivenTooLargeAMiddleItShowsItRemovedThenAddedWithTheCommonEndsKept) {
  std::vector<DiffLine> d = LineDiff("head\na\nb\ntail\n", "head\nb\na\ntail\n", /*max_cells=*/1);
  EXPECT_EQ(Render(d), " head\n-a\n-b\n+b\n+a\n tail\n");
}

TEST(HunksTest, GivenChangesFarApartItMakesTwoHunksWithThreeLinesOfContext) {
  std::string before, after;
  for (int i = 1; i <= 20; ++i) {
    before += "l" + std::to_string(i) + "\n";
    after += (i == 3 ? "changed3" : i == 17 ? "changed17" : "l" + std::to_string(i)) + "\n";
  }
  std::vector<DiffHunk> hunks = Hunks(LineDiff(before, after));
  ASSERT_EQ(hunks.size(), 2u);
  EXPECT_EQ(hunks[0].old_start, 1);
  EXPECT_EQ(hunks[0].old_count, 6);  // l1 l2, -l3, l4 l5 l6
  EXPECT_EQ(hunks[0].new_count, 6);
  EXPECT_EQ(hunks[0].lines.size(), 7u);
  EXPECT_EQ(hunks[1].old_start, 14);
  EXPECT_EQ(hunks[1].new_start, 14);
  EXPECT_EQ(hunks[1].old_count, 7);  // l14 l15 l16, -l17, l18 l19 l20
  EXPECT_EQ(hunks[1].lines.back().text, "l20");
}

TEST(HunksTest, GivenChangesCloseTogetherTheyShareOneHunk) {
  std::vector<DiffHunk> hunks =
      Hunks(LineDiff("a\nb\nc\nd\ne\nf\ng\nh\n", "A\nb\nc\nd\ne\nf\ng\nH\n"));
  ASSERT_EQ(hunks.size(), 1u);
  EXPECT_EQ(hunks[0].old_count, 8);
}

}  // namespace
}  // namespace kforge
