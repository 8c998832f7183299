// The side-effect seams of the LLM layer: HTTP and time.
//
// HttpTransport sends one HTTP POST and returns the whole response. The real one uses libcurl
// (TLS, proxies from the environment: http_proxy, https_proxy, no_proxy); tests use fakes or
// local servers. Clock reads time and sleeps, so retry waits can be skipped in tests.
//
// Thread-safety: NewCurlTransport() and SystemClock() are safe to use from many threads at once;
// implementations of these interfaces must be too.
#ifndef KFORGE_LLM_TRANSPORT_H_
#define KFORGE_LLM_TRANSPORT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/status.h"

namespace kforge::llm {

struct HttpHeader {
  std::string name;  // Responses: always lower case.
  std::string value;
};

struct HttpRequest {
  std::string url;
  std::vector<HttpHeader> headers;  // May hold a key: never log or store a request's headers.
  std::string body;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds total_timeout{600000};
  // Streaming. When set, each piece of a 2xx response's body is handed to on_body as it
  // arrives (it is kept in HttpResponse::body too); returning false ends the transfer at once
  // and Post returns what arrived, with HttpResponse::stopped set.
  std::function<bool(std::string_view)> on_body;
  // Once the body has begun, a gap of this long with no byte fails the call as [timeout]
  // (a server that died mid-answer without closing the connection). Zero: no idle limit. Before
  // the first byte (the server reading the prompt, or queueing it) only total_timeout applies.
  std::chrono::milliseconds idle_timeout{0};
};

struct HttpResponse {
  int status = 0;
  std::vector<HttpHeader> headers;  // Names in lower case, in arrival order.
  std::string body;
  bool stopped = false;  // on_body asked to stop: body holds what had arrived.

  // The first header with that (lower-case) name, or nullptr.
  const std::string* FindHeader(std::string_view lower_name) const;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;

  // Sends a POST and waits for the full response. Any HTTP status is a success here (the
  // caller interprets it). On a transport failure returns a Status tagged [timeout],
  // [connection_failed] (refused, DNS, TLS), [connection_lost] (reset, body cut short) or
  // [bad_response] (oversized body); see LlmErrorKindOf(). A body stopped by on_body is a
  // success with HttpResponse::stopped set.
  virtual Result<HttpResponse> Post(const HttpRequest& request) = 0;
};

// libcurl-backed transport. Does not follow redirects; accepts gzip; caps bodies at 64 MiB.
std::unique_ptr<HttpTransport> NewCurlTransport();

class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point Now() = 0;
  virtual std::chrono::system_clock::time_point WallNow() = 0;  // For HTTP-date Retry-After.
  virtual void SleepFor(std::chrono::milliseconds duration) = 0;
};

// The real clock. Never null; lives for the whole process.
Clock* SystemClock();

}  // namespace kforge::llm

#endif  // KFORGE_LLM_TRANSPORT_H_
