// Retry policy arithmetic: which failures to retry, how long to wait, Retry-After parsing.
//
// Policy (docs/llm.md, "Retries"): retry rate limits (429), overload (503, 529), other 5xx
// except 501/505, gateway timeouts, transport timeouts and connection resets; never retry a bad
// key, an unknown model, a too-long prompt, a filtered answer, exhausted quota, a malformed
// answer or a refused connection. A server's explicit "x-should-retry" wins. A Retry-After (or
// retry-after-ms, or Gemini's RetryInfo.retryDelay) is waited exactly; otherwise the wait is
// exponential with jitter.
//
// Thread-safety: pure functions.
#ifndef KFORGE_LLM_RETRY_H_
#define KFORGE_LLM_RETRY_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/llm/config.h"
#include "kforge/llm/llm.h"
#include "kforge/llm/transport.h"

namespace kforge::llm {

// One failed attempt, with what the retry loop and the final message need.
struct CallError {
  LlmErrorKind kind = LlmErrorKind::kBadResponse;
  std::string detail;   // What happened, in the provider's words where it gave some.
  int http_status = 0;  // 0 when no HTTP response arrived.
  std::optional<std::chrono::milliseconds> retry_after;  // The server's requested wait.
  std::optional<bool> should_retry;  // The server's explicit verdict (x-should-retry).
  std::string request_id;
};

// Builds a CallError from a Status tagged by MakeLlmError (e.g. a transport failure).
CallError CallErrorFromStatus(const Status& status);

// "0.494 s", "1.5 s", "16 s", "3600 s": a wait or timeout for a message.
std::string FormatSeconds(std::chrono::milliseconds duration);

// Parses a duration written as "26s", "1.5s", "494ms", "1m0.052s" (Go and protobuf style).
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text);

// The wait a response asks for: "retry-after-ms" (milliseconds), else "retry-after" as
// seconds or as an HTTP-date relative to `now`. nullopt when absent or unreadable.
std::optional<std::chrono::milliseconds> RetryAfterFromHeaders(
    const HttpResponse& response, std::chrono::system_clock::time_point now);

// The backoff before retry number `retry` (1 = the first retry), before any Retry-After:
// min(max_backoff, initial * multiplier^(retry-1)), scaled into [1 - jitter, 1] by random01.
std::chrono::milliseconds BackoffDelay(const RetryPolicy& policy, int retry, double random01);

struct RetryDecision {
  bool retry = false;
  std::chrono::milliseconds wait{0};
  std::string why_not;  // When !retry and the error itself was retryable: why we stopped.
};

// Decides after `attempts_made` failed attempts (>= 1) whether and how long to wait.
RetryDecision DecideRetry(const RetryPolicy& policy, const CallError& error, int attempts_made,
                          double random01);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_RETRY_H_
