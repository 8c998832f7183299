#include "llm/retry.h"

#include <gtest/gtest.h>

#include "llm/limiter.h"
#include "llm/test_util.h"

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;

TEST(ParseDurationTest, GivenGoAndProtobufDurationsItReturnsMilliseconds) {
  EXPECT_EQ(ParseDuration("26s"), milliseconds(26000));
  EXPECT_EQ(ParseDuration("494ms"), milliseconds(494));
  EXPECT_EQ(ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(ParseDuration("6m0s"), milliseconds(360000));
  EXPECT_EQ(ParseDuration("1m0.052s"), milliseconds(60052));
  EXPECT_EQ(ParseDuration("11m32.334s"), milliseconds(692334));
  EXPECT_EQ(ParseDuration("6ms"), milliseconds(6));
}

TEST(ParseDurationTest, GivenSomethingElseItReturnsNothing) {
  EXPECT_FALSE(ParseDuration(""));
  EXPECT_FALSE(ParseDuration("5"));
  EXPECT_FALSE(ParseDuration("abc"));
  EXPECT_FALSE(ParseDuration("5 parsecs"));
  EXPECT_FALSE(ParseDuration("s"));
}

HttpResponse WithHeaders(std::vector<HttpHeader> headers) {
  return HttpResponse{429, std::move(headers), ""};
}

TEST(RetryAfterTest, GivenRetryAfterMsItWinsOverRetryAfter) {
  auto now = std::chrono::system_clock::now();
  EXPECT_EQ(
      RetryAfterFromHeaders(WithHeaders({{"retry-after", "1"}, {"retry-after-ms", "494"}}), now),
      milliseconds(494));
}

TEST(RetryAfterTest, GivenSecondsOrAnHttpDateItReturnsTheWait) {
  auto now = std::chrono::system_clock::from_time_t(1750137708);  // Tue, 17 Jun 2025 05:21:48
  EXPECT_EQ(RetryAfterFromHeaders(WithHeaders({{"retry-after", "16"}}), now), milliseconds(16000));
  EXPECT_EQ(
      RetryAfterFromHeaders(WithHeaders({{"retry-after", "Tue, 17 Jun 2025 05:21:58 GMT"}}), now),
      milliseconds(10000));
  EXPECT_EQ(
      RetryAfterFromHeaders(WithHeaders({{"retry-after", "Tue, 17 Jun 2025 05:00:00 GMT"}}), now),
      milliseconds(0));
  EXPECT_FALSE(RetryAfterFromHeaders(WithHeaders({{"retry-after", "soon"}}), now));
  EXPECT_FALSE(RetryAfterFromHeaders(WithHeaders({}), now));
}

TEST(RetryAfterTest, GivenTheCapturedRateLimitHeadersItReadsTheirWaits) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  auto now = std::chrono::system_clock::now();
  HttpResponse openai = testing::ParseHeadersFile(
      testing::ReadFixture("openai/errors/429_rate_limit_exceeded.headers.txt"));
  EXPECT_EQ(openai.status, 429);
  EXPECT_EQ(RetryAfterFromHeaders(openai, now), milliseconds(494));
  HttpResponse anthropic = testing::ParseHeadersFile(
      testing::ReadFixture("anthropic/errors/429_rate_limit_error_captured.headers.txt"));
  EXPECT_EQ(RetryAfterFromHeaders(anthropic, now), milliseconds(16000));
  for (const char* name : {"openai/ratelimit_headers_docs_sample.headers.txt",
                           "openai/response_200_ratelimit_headers_captured.headers.txt"}) {
    HttpResponse response = testing::ParseHeadersFile(testing::ReadFixture(name));
    EXPECT_EQ(response.status, 200) << name;
    EXPECT_FALSE(RetryAfterFromHeaders(response, now)) << name;
    // The reset durations in these headers are the Go-style durations ParseDuration reads.
    ASSERT_NE(response.FindHeader("x-ratelimit-reset-tokens"), nullptr) << name;
    EXPECT_TRUE(ParseDuration(*response.FindHeader("x-ratelimit-reset-tokens"))) << name;
    EXPECT_TRUE(ParseDuration(*response.FindHeader("x-ratelimit-reset-requests"))) << name;
  }
}

TEST(BackoffDelayTest, GivenNoJitterItDoublesUpToTheCap) {
  RetryPolicy policy;
  policy.initial_backoff = milliseconds(1000);
  policy.max_backoff = milliseconds(5000);
  policy.jitter = 0;
  EXPECT_EQ(BackoffDelay(policy, 1, 0.7), milliseconds(1000));
  EXPECT_EQ(BackoffDelay(policy, 2, 0.7), milliseconds(2000));
  EXPECT_EQ(BackoffDelay(policy, 3, 0.7), milliseconds(4000));
  EXPECT_EQ(BackoffDelay(policy, 4, 0.7), milliseconds(5000));
}

TEST(BackoffDelayTest, GivenJitterTheWaitStaysInItsBand) {
  RetryPolicy policy;  // 1 s initial, jitter 0.5.
  EXPECT_EQ(BackoffDelay(policy, 2, 0.0), milliseconds(2000));
  EXPECT_EQ(BackoffDelay(policy, 2, 1.0), milliseconds(1000));
  EXPECT_EQ(BackoffDelay(policy, 2, 0.5), milliseconds(1500));
}

CallError ErrorOf(LlmErrorKind kind) {
  CallError error;
  error.kind = kind;
  return error;
}

TEST(DecideRetryTest, GivenARetryableErrorItWaitsTheBackoff) {
  RetryPolicy policy;
  policy.jitter = 0;
  for (LlmErrorKind kind :
       {LlmErrorKind::kRateLimited, LlmErrorKind::kOverloaded, LlmErrorKind::kServerError,
        LlmErrorKind::kTimeout, LlmErrorKind::kConnectionLost}) {
    RetryDecision decision = DecideRetry(policy, ErrorOf(kind), 1, 0.3);
    EXPECT_TRUE(decision.retry) << LlmErrorKindTag(kind);
    EXPECT_EQ(decision.wait, milliseconds(1000));
  }
}

TEST(DecideRetryTest, GivenAnErrorARetryCannotFixItStops) {
  RetryPolicy policy;
  for (LlmErrorKind kind :
       {LlmErrorKind::kAuth, LlmErrorKind::kPermissionDenied, LlmErrorKind::kModelNotFound,
        LlmErrorKind::kContextTooLong, LlmErrorKind::kContentFiltered,
        LlmErrorKind::kQuotaExhausted, LlmErrorKind::kBadRequest, LlmErrorKind::kBadResponse,
        LlmErrorKind::kConnectionFailed}) {
    RetryDecision decision = DecideRetry(policy, ErrorOf(kind), 1, 0.3);
    EXPECT_FALSE(decision.retry) << LlmErrorKindTag(kind);
    EXPECT_TRUE(decision.why_not.empty());
  }
}

TEST(DecideRetryTest, GivenRetryAfterItWaitsExactlyThatLong) {
  CallError error = ErrorOf(LlmErrorKind::kRateLimited);
  error.retry_after = milliseconds(7000);
  RetryDecision decision = DecideRetry(RetryPolicy(), error, 1, 0.9);
  EXPECT_TRUE(decision.retry);
  EXPECT_EQ(decision.wait, milliseconds(7000));
}

TEST(DecideRetryTest, GivenRetryAfterBeyondTheLimitItStopsAndSaysWhy) {
  CallError error = ErrorOf(LlmErrorKind::kRateLimited);
  error.retry_after = milliseconds(3600 * 1000);
  RetryDecision decision = DecideRetry(RetryPolicy(), error, 1, 0.0);
  EXPECT_FALSE(decision.retry);
  EXPECT_NE(decision.why_not.find("asked to wait 3600 s"), std::string::npos) << decision.why_not;
  EXPECT_NE(decision.why_not.find("max_retry_after_s"), std::string::npos);
}

TEST(DecideRetryTest, GivenTheLastAttemptItStopsAndCountsTheAttempts) {
  RetryPolicy policy;
  policy.max_attempts = 3;
  RetryDecision decision = DecideRetry(policy, ErrorOf(LlmErrorKind::kServerError), 3, 0.0);
  EXPECT_FALSE(decision.retry);
  EXPECT_EQ(decision.why_not, "gave up after 3 attempts (retry.max_attempts = 3)");
}

TEST(DecideRetryTest, GivenTheServersExplicitVerdictItWins) {
  CallError no = ErrorOf(LlmErrorKind::kServerError);
  no.should_retry = false;
  EXPECT_FALSE(DecideRetry(RetryPolicy(), no, 1, 0).retry);
  CallError yes = ErrorOf(LlmErrorKind::kBadRequest);
  yes.should_retry = true;
  EXPECT_TRUE(DecideRetry(RetryPolicy(), yes, 1, 0).retry);
}

TEST(FormatSecondsTest, WritesWholeSecondsPlainly) {
  EXPECT_EQ(FormatSeconds(milliseconds(494)), "0.494 s");
  EXPECT_EQ(FormatSeconds(milliseconds(1500)), "1.5 s");
  EXPECT_EQ(FormatSeconds(milliseconds(3600000)), "3600 s");
}

TEST(CallErrorFromStatusTest, GivenATaggedStatusItKeepsKindAndDetail) {
  CallError error = CallErrorFromStatus(
      MakeLlmError(LlmErrorKind::kTimeout, "http", "POST http://x failed: timed out"));
  EXPECT_EQ(error.kind, LlmErrorKind::kTimeout);
  EXPECT_EQ(error.detail, "POST http://x failed: timed out");
}

TEST(ConcurrencyLimiterTest, GivenMoreThreadsThanSlotsAtMostLimitRunAtOnce) {
  ConcurrencyLimiter limiter(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&limiter] {
      ConcurrencyLimiter::Slot slot = limiter.Acquire();
      std::this_thread::sleep_for(milliseconds(20));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(limiter.peak(), 2);
  EXPECT_EQ(limiter.in_flight(), 0);
}

}  // namespace
}  // namespace kforge::llm
