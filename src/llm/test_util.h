// Test helpers for the llm stage: a per-process output folder that is scanned for the test key
// when the test program ends, fixture loading, a fake transport, a fake clock, and a local HTTP
// server (cpp-httplib) to stand in for providers.
#ifndef KFORGE_LLM_TEST_UTIL_H_
#define KFORGE_LLM_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kforge/llm/config.h"
#include "kforge/llm/pricing.h"
#include "kforge/llm/transport.h"
#include "llm/client.h"

namespace kforge::llm::testing {

// The API key every test uses. It must never appear in a file a test writes; the global test
// environment checks all of TestRoot() for it (and for kTestKeyTail) when the program ends.
inline constexpr char kTestKey[] = "sk-kforge-test-7c0ffee0ddba11-SECRET-DO-NOT-LEAK";
inline constexpr char kTestKeyTail[] = "7c0ffee0ddba11-SECRET";
inline constexpr char kTestKeyEnv[] = "KFORGE_TEST_LLM_KEY";

// This process's output folder (created on first use, removed at exit unless
// KFORGE_KEEP_TEST_OUTPUT is set). Every file a test writes goes below it.
std::filesystem::path TestRoot();
// A fresh, empty folder below TestRoot().
std::filesystem::path NewTestDir(const std::string& name);
// Files below `root` whose bytes contain `needle`.
std::vector<std::string> FilesContaining(const std::filesystem::path& root,
                                         const std::string& needle);

std::string ReadFile(const std::filesystem::path& path);
void WriteFile(const std::filesystem::path& path, const std::string& content);
std::string Base64Decode(std::string_view text);

// The wire fixture folder (src/llm/testdata, or $KFORGE_LLM_WIRE_DIR); empty if it is missing.
std::filesystem::path WireDir();
#define KF_SKIP_WITHOUT_WIRE_FIXTURES()                                      \
  if (::kforge::llm::testing::WireDir().empty())                             \
  GTEST_SKIP() << "wire fixtures not found (looked in src/llm/testdata and " \
                  "$KFORGE_LLM_WIRE_DIR)"
std::string ReadFixture(const std::string& relative);
// Reads "<name>.headers.txt": an optional "HTTP/1.1 <status>" line, then "name: value" lines.
HttpResponse ParseHeadersFile(const std::string& text);
// The .headers.txt that goes with a body fixture: "<name>.headers.txt" for "<name>.json", or
// the name before its first '.' ("x.COMPOSITE.json" -> "x.headers.txt"); "" if there is none.
std::string HeadersFileFor(const std::string& relative);
// The fixture as an HTTP response: body from `relative`, status and headers from the matching
// .headers.txt when it exists, else the status from the file name ("errors/429_...", "error_404_")
// or 200.
HttpResponse FixtureResponse(const std::string& relative);

// Answers from a queue (the last answer repeats) and records the requests. A request with
// on_body gets a 2xx body handed to it in pieces of piece_bytes, as a server streams it.
class FakeTransport : public HttpTransport {
 public:
  size_t piece_bytes = 97;
  void Push(Result<HttpResponse> reply);
  void PushJson(int status, const std::string& body, std::vector<HttpHeader> headers = {});
  Result<HttpResponse> Post(const HttpRequest& request) override;
  std::vector<HttpRequest> requests() const;
  int calls() const;
  // Called inside Post (e.g. to sleep and count concurrent calls).
  std::function<void()> on_post;

 private:
  void Feed(const HttpRequest& request, HttpResponse* response) const;

  mutable std::mutex mu_;
  std::deque<Result<HttpResponse>> replies_;
  std::vector<HttpRequest> requests_;
};

// Time that only moves when something sleeps; records the sleeps.
class FakeClock : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() override;
  std::chrono::system_clock::time_point WallNow() override;
  void SleepFor(std::chrono::milliseconds duration) override;
  std::vector<std::chrono::milliseconds> sleeps() const;

 private:
  mutable std::mutex mu_;
  std::chrono::milliseconds offset_{0};
  std::vector<std::chrono::milliseconds> sleeps_;
};

// A provider stand-in on 127.0.0.1:<free port>, answering every POST with `handler`.
class LocalServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  explicit LocalServer(Handler handler);
  ~LocalServer();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int hits() const { return hits_; }
  // True once the server is shutting down: slow handlers should return.
  bool stopping() const { return stopping_; }
  // Sleeps up to `duration` in small steps, returning early when stopping().
  void SleepUnlessStopping(std::chrono::milliseconds duration) const;

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> hits_{0};
  std::atomic<bool> stopping_{false};
};

// A port on 127.0.0.1 where nothing listens (bound, then closed).
int UnusedPort();

// A ClientEnv with the fakes, the built-in price table, a fresh ledger, a limiter of 4, and a
// retry policy without jitter (waits: 1 s, 2 s, 4 s ...).
ClientEnv TestEnv(std::shared_ptr<HttpTransport> transport, FakeClock* clock, int max_attempts = 3);
// Settings for `provider` ("openai", "anthropic", "gemini", "vllm", ...) and `model`, whose key
// comes from kTestKeyEnv, pointing at `base_url` when given; not streamed (stream = false) unless
// the test sets it.
ProviderSettings TestSettings(const std::string& provider, const std::string& model,
                              const std::string& base_url = "");
// Sets kTestKeyEnv to kTestKey and returns the loaded (registered) secret.
Secret TestKey();

}  // namespace kforge::llm::testing

#endif  // KFORGE_LLM_TEST_UTIL_H_
