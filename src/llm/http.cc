// The libcurl transport and the system clock (transport.h).
//
// One easy handle per request keeps the transport free of shared mutable state, so it is safe
// from many threads. libcurl reads proxies from http_proxy / https_proxy / no_proxy itself.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>
#include <thread>

#include "kforge/llm/llm.h"
#include "kforge/llm/transport.h"
#include "llm/retry.h"

namespace kforge::llm {

const std::string* HttpResponse::FindHeader(std::string_view lower_name) const {
  for (const HttpHeader& header : headers) {
    if (header.name == lower_name) return &header.value;
  }
  return nullptr;
}

namespace {

constexpr size_t kMaxBodyBytes = 64u << 20;
constexpr std::string_view kWho = "http";

using SteadyTime = std::chrono::steady_clock::time_point;

struct Collector {
  CURL* handle = nullptr;
  const HttpRequest* request = nullptr;
  HttpResponse response;
  bool too_large = false;
  bool idle = false;               // The idle limit ended the transfer.
  SteadyTime last_byte{};          // When the body's last piece came; unset before the first.
};

bool Succeeded(CURL* handle) {
  long status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  return status >= 200 && status < 300;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* collector = static_cast<Collector*>(user);
  size_t bytes = size * count;
  if (collector->response.body.size() + bytes > kMaxBodyBytes) {
    collector->too_large = true;
    return 0;  // Makes libcurl stop with CURLE_WRITE_ERROR.
  }
  collector->response.body.append(data, bytes);
  collector->last_byte = std::chrono::steady_clock::now();
  const auto& on_body = collector->request->on_body;
  if (on_body && Succeeded(collector->handle) && !on_body(std::string_view(data, bytes))) {
    collector->response.stopped = true;
    return 0;
  }
  return bytes;
}

// libcurl calls this about once a second while a transfer runs (and on every piece of data):
// ends the transfer when the body went quiet for longer than the idle limit.
int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* collector = static_cast<Collector*>(user);
  const auto limit = collector->request->idle_timeout;
  if (limit.count() <= 0 || collector->last_byte == SteadyTime{}) return 0;
  if (std::chrono::steady_clock::now() - collector->last_byte < limit) return 0;
  collector->idle = true;
  return 1;  // Makes libcurl stop with CURLE_ABORTED_BY_CALLBACK.
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// Called once per header line, status line included. A new status line (after "100 Continue")
// starts a fresh header list.
size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* collector = static_cast<Collector*>(user);
  size_t bytes = size * count;
  std::string_view line = Trim(std::string_view(data, bytes));
  if (line.substr(0, 5) == "HTTP/") {
    collector->response.headers.clear();
    return bytes;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return bytes;
  std::string name(Trim(line.substr(0, colon)));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  collector->response.headers.push_back({name, std::string(Trim(line.substr(colon + 1)))});
  return bytes;
}

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

LlmErrorKind KindOfCurlCode(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return LlmErrorKind::kTimeout;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return LlmErrorKind::kConnectionLost;
    default:
      return LlmErrorKind::kConnectionFailed;  // Refused, DNS, TLS, bad URL: retry won't help.
  }
}

Status CurlError(CURLcode code, const char* error_buffer, const HttpRequest& request) {
  std::string detail = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
  LlmErrorKind kind = KindOfCurlCode(code);
  std::string message = "POST " + request.url + " failed: " + detail;
  if (kind == LlmErrorKind::kTimeout) {
    message += " (connect timeout " + FormatSeconds(request.connect_timeout) + ", total timeout " +
               FormatSeconds(request.total_timeout) +
               "; raise timeout_s in the config if the model "
               "is slow)";
  } else if (code == CURLE_COULDNT_CONNECT) {
    message += " (is the server running and listening at that address?)";
  } else if (kind == LlmErrorKind::kConnectionLost) {
    message += " (the connection broke before the whole response arrived)";
  }
  return MakeLlmError(kind, kWho, message);
}

struct CurlDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

class CurlTransport : public HttpTransport {
 public:
  CurlTransport() { InitCurlOnce(); }

  Result<HttpResponse> Post(const HttpRequest& request) override {
    std::unique_ptr<CURL, CurlDeleter> handle(curl_easy_init());
    if (!handle) return Status::Internal("curl_easy_init failed");
    std::unique_ptr<curl_slist, SlistDeleter> headers(BuildHeaders(request));
    Collector collector;
    collector.handle = handle.get();
    collector.request = &request;
    char error_buffer[CURL_ERROR_SIZE] = {0};
    Configure(handle.get(), request, headers.get(), &collector, error_buffer);
    CURLcode code = curl_easy_perform(handle.get());
    if (collector.too_large) {
      return MakeLlmError(LlmErrorKind::kBadResponse, kWho,
                          "response from " + request.url + " is larger than 64 MiB");
    }
    if (collector.idle) {
      return MakeLlmError(LlmErrorKind::kTimeout, kWho,
                          "POST " + request.url + ": the answer stopped arriving: no byte for " +
                              FormatSeconds(request.idle_timeout) +
                              " after it began (idle_timeout_s in the config; the server may "
                              "have died without closing the connection)");
    }
    if (code != CURLE_OK && !collector.response.stopped) {
      return CurlError(code, error_buffer, request);
    }
    long status = 0;
    curl_easy_getinfo(handle.get(), CURLINFO_RESPONSE_CODE, &status);
    collector.response.status = static_cast<int>(status);
    return std::move(collector.response);
  }

 private:
  static curl_slist* BuildHeaders(const HttpRequest& request) {
    curl_slist* list = nullptr;
    for (const HttpHeader& header : request.headers) {
      list = curl_slist_append(list, (header.name + ": " + header.value).c_str());
    }
    // Without this libcurl sends "Expect: 100-continue" for large bodies and waits for it.
    return curl_slist_append(list, "Expect:");
  }

  static void Configure(CURL* h, const HttpRequest& request, curl_slist* headers,
                        Collector* collector, char* error_buffer) {
    curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, collector);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, collector);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(request.connect_timeout.count()));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.total_timeout.count()));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // Timeouts without SIGALRM: thread-safe.
    if (request.idle_timeout.count() > 0) {
      curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, OnProgress);
      curl_easy_setopt(h, CURLOPT_XFERINFODATA, collector);
      curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85 replaced the bitmask option.
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // Whatever libcurl can decode.
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "kforge/0.1");
  }
};

class RealClock : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() override { return std::chrono::steady_clock::now(); }
  std::chrono::system_clock::time_point WallNow() override {
    return std::chrono::system_clock::now();
  }
  void SleepFor(std::chrono::milliseconds duration) override {
    std::this_thread::sleep_for(duration);
  }
};

}  // namespace

std::unique_ptr<HttpTransport> NewCurlTransport() { return std::make_unique<CurlTransport>(); }

Clock* SystemClock() {
  static RealClock* clock = new RealClock();
  return clock;
}

}  // namespace kforge::llm
