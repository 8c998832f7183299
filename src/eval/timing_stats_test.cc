// The statistics of timed runs (base/stats.h, kforge/verdict.h): runs alternate between input
// sets whose speeds may differ, and are combined per set.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/stats.h"
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

TEST(TimingStatsTest, GivenNoSetPerRunTheRunsArePooled) {
  EXPECT_DOUBLE_EQ(SetMedian(kGelu, {}), Median(kGelu));
  EXPECT_DOUBLE_EQ(SetCoefficientOfVariation(kGelu, {0, 1}), CoefficientOfVariation(kGelu));
}

TEST(TimingStatsTest, GivenAWorkerRecordWithSetsTheVerdictCombinesThemAndBoundsByTheWall) {
  nlohmann::json tj = {{"device_ms", kGelu}, {"host_ms", kGelu}, {"wall_ms", kGelu}, {"sets_used", kSets},
                       {"overhead_ms", 0.1}, {"overhead_mad_ms", 0.0}};
  TimingStats t = TimingFromWorker(tj);
  EXPECT_EQ(t.runs, 14);
  EXPECT_DOUBLE_EQ(t.median_ms, SetMedian(kGelu, kSets));
  EXPECT_DOUBLE_EQ(t.cv, SetCoefficientOfVariation(kGelu, kSets));
  EXPECT_FALSE(t.wall_bounded);
  // A device timer that reports half of what the supervisor's clock saw is bounded by it.
  std::vector<double> half;
  for (double x : kGelu) half.push_back(x / 2);
  tj["device_ms"] = half;
  t = TimingFromWorker(tj);
  EXPECT_TRUE(t.wall_bounded);
  EXPECT_GT(t.median_ms, 0.9 * SetMedian(kGelu, kSets));
  // Without sets_used (or with one of the wrong length) the runs are pooled.
  tj["device_ms"] = kGelu;
  tj["sets_used"] = {0, 1};
  EXPECT_DOUBLE_EQ(TimingFromWorker(tj).median_ms, Median(kGelu));
}

}  // namespace
}  // namespace kforge
