// The job's timing plan through JSON, as the orchestrator writes it and kforge-worker reads it.
#include "worker/protocol.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

using nlohmann::json;

json JobWithTiming(const json& timing) {
  return {{"backend", "cuda"}, {"sets", json::array()}, {"timing", timing}};
}

TEST(ProtocolTest, TheHeadStartTravelsWithTheTimingPlan) {
  TimingPlan plan;
  plan.queue_ms = 0.2;
  const json j = TimingPlanToJson(plan);
  EXPECT_DOUBLE_EQ(j.at("queue_ms").get<double>(), 0.2);
  Result<Job> job = JobFromJson(JobWithTiming({{"sets", json::array()}, {"queue_ms", 0.2}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(job->timing.has_value());
  EXPECT_DOUBLE_EQ(job->timing->queue_ms, 0.2);
}

TEST(ProtocolTest, APlanWithoutAHeadStartHasNone) {
  Result<Job> job = JobFromJson(JobWithTiming({{"sets", json::array()}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_DOUBLE_EQ(job->timing->queue_ms, 0.0);
}

TEST(ProtocolTest, AHeadStartOutsideZeroToTenMillisecondsIsRefused) {
  for (double ms : {-1.0, 11.0}) {
    Result<Job> job = JobFromJson(JobWithTiming({{"sets", json::array()}, {"queue_ms", ms}}));
    ASSERT_FALSE(job.ok()) << ms;
    EXPECT_NE(job.status().message().find("queue_ms"), std::string::npos) << job.status().ToString();
  }
}

}  // namespace
}  // namespace kforge
