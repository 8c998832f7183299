// The statistics of timed runs (base/stats.h, kforge/verdict.h, eval/worker_report.h): runs alternate between input
// sets whose speeds may differ, and are combined per set.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "base/stats.h"
#include "eval/worker_report.h"
#include "kforge/verdict.h"

namespace kforge {
namespace {

// gelu's seed on the CPU, as measured: its magnitude-4 set takes about twice as long.
const std::vector<double> kGelu = {38.7, 81.7, 42.8, 87.3, 37.1, 72.0, 36.2, 74.5, 37.8, 71.4, 35.6, 68.7, 33.1, 74.3};
const std::vector<int> kSets = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};

TEST(TimingStatsTest, GivenTwoSetsOfDifferentSpeedsTheMedianIsTheMeanOfTheirMedians) {
  EXPECT_DOUBLE_EQ(SetMedian(kGelu, kSets), 0.5 * (37.1 + 74.3));
  // Pooled, the median falls between the humps, on no run at all.
  EXPECT_DOUBLE_EQ(Median(kGelu), 0.5 * (42.8 + 68.7));
  // One slower run in the fast set moves the pooled median by a whole hump's width; the
  // combined one by a step within its set.
  std::vector<double> moved = kGelu;
  moved[0] = 70.0;
  EXPECT_GT(Median(moved) - Median(kGelu), 10.0);
  EXPECT_LT(SetMedian(moved, kSets) - SetMedian(kGelu, kSets), 1.0);
}

TEST(TimingStatsTest, GivenTwoSetsTheSpreadIsTheSetsOwnNotTheGapBetweenThem) {
  EXPECT_GT(CoefficientOfVariation(kGelu), 0.3);
  const double cv = SetCoefficientOfVariation(kGelu, kSets);
  EXPECT_GT(cv, 0.05);
  EXPECT_LT(cv, 0.10);
  // Two sets each without spread: none, however far apart they are.
  EXPECT_DOUBLE_EQ(SetCoefficientOfVariation({1, 5, 1, 5}, {0, 1, 0, 1}), 0.0);
  // A set of one run is not yet known.
  EXPECT_DOUBLE_EQ(SetCoefficientOfVariation({1, 5, 1}, {0, 1, 0}), std::sqrt(0.5));
}

// gelu's omp_simd candidate on this 2-core VM: most runs near 0.7 ms, a few preempted ones
// many times slower. The CV never meets 2%; the median is already pinned down.
const std::vector<double> kTailed = {0.70, 0.71, 0.69, 0.72, 3.90, 0.70, 0.71, 0.70, 0.69, 0.72,
                                     5.80, 0.70, 0.71, 0.70, 0.72, 0.69, 0.70, 2.10, 0.71, 0.70};

TEST(TimingStatsTest, GivenALongTailTheMedianIsKnownLongBeforeTheSpreadMeetsATarget) {
  EXPECT_GT(CoefficientOfVariation(kTailed), 1.0);
  const double p = MedianPrecision(kTailed);
  EXPECT_LT(p, 0.02);
  // Ranks round(10 - 0.98 sqrt 20) = round(5.62) = 6 and round(11 + 4.38) = 15 of 20: the
  // interval from the 6th to the 15th smallest value, 0.70 to 0.72, around a median of 0.705.
  EXPECT_NEAR(p, (0.72 - 0.70) / (2 * 0.705), 1e-12);
}

TEST(TimingStatsTest, GivenTooFewRunsOrARunsMedianOfZeroThePrecisionIsNotYetKnown) {
  // 5 runs: rank round(2.5 - 2.19) = 0 is outside; 6 runs: ranks 1 to 6, the whole sample.
  EXPECT_DOUBLE_EQ(MedianPrecision({0.7, 0.7, 0.7, 0.7, 0.7}), 1.0);
  EXPECT_DOUBLE_EQ(MedianPrecision({0.6, 0.7, 0.7, 0.7, 0.7, 0.8}), 0.2 / 1.4);
  EXPECT_DOUBLE_EQ(MedianPrecision({}), 1.0);
  EXPECT_DOUBLE_EQ(MedianPrecision(std::vector<double>(10, 0.0)), 1.0);
  EXPECT_DOUBLE_EQ(MedianPrecision(std::vector<double>(8, 0.7)), 0.0);
  // Two sets, one known exactly and one not yet.
  std::vector<double> xs;
  std::vector<int> sets;
  for (int i = 0; i < 12; ++i) xs.push_back(0.7), sets.push_back(0);
  for (int i = 0; i < 5; ++i) xs.push_back(1.4), sets.push_back(1);
  EXPECT_DOUBLE_EQ(SetMedianPrecision(xs, sets), std::sqrt(0.5));
}

TEST(TimingStatsTest, GivenAWideSampleThePrecisionIsWideAndFallsWithMoreRuns) {
  std::vector<double> wide;
  for (int i = 0; i < 16; ++i) wide.push_back(1.0 + 0.1 * (i % 8));  // 1.0 .. 1.7, uniform
  const double p16 = MedianPrecision(wide);
  EXPECT_GT(p16, 0.1);
  std::vector<double> more;
  for (int i = 0; i < 160; ++i) more.push_back(1.0 + 0.1 * (i % 8));
  EXPECT_LT(MedianPrecision(more), p16);
}

// The Python worker stops by the same rule (python/kforge_pyworker.py set_median_precision):
// the two formulas agree on the same runs, round-half cases included.
TEST(TimingStatsTest, ThePythonWorkersMedianPrecisionIsTheSameFormula) {
  std::vector<double> xs;
  std::vector<int> sets;
  for (size_t i = 0; i < kTailed.size(); ++i) xs.push_back(kTailed[i] * (1 + 0.013 * static_cast<double>(i % 5))), sets.push_back(static_cast<int>(i % 2));
  for (int n : {9, 11, 12, 13, 16, 17, 20}) {
    std::vector<double> head(xs.begin(), xs.begin() + n);
    std::vector<int> hs(sets.begin(), sets.begin() + n);
    std::string cmd = "cd " KFORGE_PYTHON_DIR " && python3 -c 'import json, sys; import kforge_pyworker as w; "
                      "print(repr(w.set_median_precision(*json.loads(sys.argv[1]))))' '" +
                      nlohmann::json({head, hs}).dump() + "'";
    FILE* f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[64] = {};
    ASSERT_NE(std::fgets(buf, sizeof buf, f), nullptr) << cmd;
    pclose(f);
    EXPECT_NEAR(std::stod(buf), SetMedianPrecision(head, hs), 1e-12) << "n = " << n;
  }
}

TEST(TimingStatsTest, GivenNoSetPerRunTheRunsArePooled) {
  EXPECT_DOUBLE_EQ(SetMedian(kGelu, {}), Median(kGelu));
  EXPECT_DOUBLE_EQ(SetCoefficientOfVariation(kGelu, {0, 1}), CoefficientOfVariation(kGelu));
}

TEST(TimingStatsTest, GivenAWorkerRecordWithSetsTheVerdictCombinesThemAndBoundsByTheWall) {
  WorkerTiming tj;
  tj.device_ms = tj.host_ms = tj.wall_ms = kGelu;
  tj.sets_used = kSets;
  tj.overhead_ms = 0.1;
  TimingStats t = TimingFromWorker(tj);
  EXPECT_EQ(t.runs, 14);
  EXPECT_DOUBLE_EQ(t.median_ms, SetMedian(kGelu, kSets));
  EXPECT_DOUBLE_EQ(t.cv, SetCoefficientOfVariation(kGelu, kSets));
  EXPECT_FALSE(t.wall_bounded);
  // A device timer that reports half of what the supervisor's clock saw is bounded by it.
  std::vector<double> half;
  for (double x : kGelu) half.push_back(x / 2);
  tj.device_ms = half;
  t = TimingFromWorker(tj);
  EXPECT_TRUE(t.wall_bounded);
  EXPECT_GT(t.median_ms, 0.9 * SetMedian(kGelu, kSets));
  // Without sets_used (or with one of the wrong length) the runs are pooled.
  tj.device_ms = kGelu;
  tj.sets_used = {0, 1};
  EXPECT_DOUBLE_EQ(TimingFromWorker(tj).median_ms, Median(kGelu));
}

}  // namespace
}  // namespace kforge
