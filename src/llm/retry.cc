#include "llm/retry.h"

#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace kforge::llm {

namespace {

using std::chrono::milliseconds;

std::optional<double> ParseNumber(std::string_view text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// Multiplier in milliseconds for a duration unit, or 0 if unknown.
double UnitMs(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60000;
  if (unit == "h") return 3600000;
  return 0;
}

}  // namespace

std::string FormatSeconds(milliseconds duration) {
  char text[32];
  if (duration.count() % 1000 == 0) {
    std::snprintf(text, sizeof text, "%lld s", static_cast<long long>(duration.count() / 1000));
  } else {
    std::snprintf(text, sizeof text, "%.3g s", duration.count() / 1000.0);
  }
  return text;
}

CallError CallErrorFromStatus(const Status& status) {
  CallError error;
  error.kind = LlmErrorKindOf(status);
  if (error.kind == LlmErrorKind::kNone) error.kind = LlmErrorKind::kConnectionFailed;
  const std::string& message = status.message();
  size_t tag_end = message.find("] ");
  error.detail = tag_end == std::string::npos ? message : message.substr(tag_end + 2);
  return error;
}

std::optional<milliseconds> ParseDuration(std::string_view text) {
  double total_ms = 0;
  bool any = false;
  while (!text.empty()) {
    size_t unit_at = text.find_first_not_of("0123456789.");
    if (unit_at == 0 || unit_at == std::string_view::npos) return std::nullopt;
    size_t unit_end = text.find_first_of("0123456789.", unit_at);
    if (unit_end == std::string_view::npos) unit_end = text.size();
    std::optional<double> number = ParseNumber(text.substr(0, unit_at));
    double unit = UnitMs(text.substr(unit_at, unit_end - unit_at));
    if (!number || unit == 0) return std::nullopt;
    total_ms += *number * unit;
    any = true;
    text.remove_prefix(unit_end);
  }
  if (!any) return std::nullopt;
  return milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

std::optional<milliseconds> RetryAfterFromHeaders(const HttpResponse& response,
                                                  std::chrono::system_clock::time_point now) {
  if (const std::string* ms = response.FindHeader("retry-after-ms")) {
    if (std::optional<double> value = ParseNumber(*ms)) {
      return milliseconds(static_cast<int64_t>(*value));
    }
  }
  const std::string* value = response.FindHeader("retry-after");
  if (value == nullptr) return std::nullopt;
  if (std::optional<double> seconds = ParseNumber(*value)) {
    return milliseconds(static_cast<int64_t>(std::llround(*seconds * 1000)));
  }
  time_t when = curl_getdate(value->c_str(), nullptr);  // RFC 7231 HTTP-date.
  if (when < 0) return std::nullopt;
  auto wait = std::chrono::system_clock::from_time_t(when) - now;
  return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(wait));
}

milliseconds BackoffDelay(const RetryPolicy& policy, int retry, double random01) {
  double base =
      policy.initial_backoff.count() * std::pow(policy.backoff_multiplier, std::max(0, retry - 1));
  base = std::min(base, static_cast<double>(policy.max_backoff.count()));
  double jitter = std::clamp(policy.jitter, 0.0, 1.0);
  double scaled = base * (1.0 - jitter * std::clamp(random01, 0.0, 1.0));
  return milliseconds(static_cast<int64_t>(scaled));
}

RetryDecision DecideRetry(const RetryPolicy& policy, const CallError& error, int attempts_made,
                          double random01) {
  RetryDecision decision;
  if (!error.should_retry.value_or(IsRetryableKind(error.kind))) return decision;
  if (attempts_made >= policy.max_attempts) {
    decision.why_not = "gave up after " + std::to_string(attempts_made) + " attempt" +
                       (attempts_made == 1 ? "" : "s") +
                       " (retry.max_attempts = " + std::to_string(policy.max_attempts) + ")";
    return decision;
  }
  if (error.retry_after && *error.retry_after > policy.max_retry_after) {
    decision.why_not = "the server asked to wait " + FormatSeconds(*error.retry_after) +
                       " before retrying, longer than retry.max_retry_after_s = " +
                       FormatSeconds(policy.max_retry_after);
    return decision;
  }
  decision.retry = true;
  decision.wait =
      error.retry_after ? *error.retry_after : BackoffDelay(policy, attempts_made, random01);
  return decision;
}

}  // namespace kforge::llm
