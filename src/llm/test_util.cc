#include "llm/test_util.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "kforge/llm/secrets.h"

namespace kforge::llm::testing {

namespace fs = std::filesystem;

fs::path TestRoot() {
  static const fs::path root = [] {
    fs::path path = fs::temp_directory_path() / ("kforge-llm-tests-" + std::to_string(getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
    return path;
  }();
  return root;
}

fs::path NewTestDir(const std::string& name) {
  static std::atomic<int> counter{0};
  fs::path dir = TestRoot() / (name + "-" + std::to_string(counter++));
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> FilesContaining(const fs::path& root, const std::string& needle) {
  std::vector<std::string> hits;
  if (!fs::exists(root)) return hits;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    if (ReadFile(entry.path()).find(needle) != std::string::npos) {
      hits.push_back(entry.path().string());
    }
  }
  return hits;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteFile(const fs::path& path, const std::string& content) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

std::string Base64Decode(std::string_view text) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    size_t value = kAlphabet.find(c);
    if (value == std::string::npos) continue;  // '=' and whitespace.
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

fs::path WireDir() {
  const char* from_env = std::getenv("KFORGE_LLM_WIRE_DIR");
  fs::path dir = from_env ? fs::path(from_env) : fs::path(KFORGE_LLM_TESTDATA);
  return fs::is_directory(dir / "openai") ? dir : fs::path();
}

std::string ReadFixture(const std::string& relative) {
  fs::path path = WireDir() / relative;
  EXPECT_TRUE(fs::exists(path)) << "missing fixture " << path;
  return ReadFile(path);
}

HttpResponse ParseHeadersFile(const std::string& text) {
  HttpResponse response;
  response.status = 200;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("HTTP/", 0) == 0) {
      response.status = std::atoi(line.substr(line.find(' ') + 1).c_str());
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    response.headers.push_back({name, value});
  }
  return response;
}

namespace {
int StatusFromName(const std::string& relative) {
  std::string name = fs::path(relative).filename().string();
  if (name.rfind("error_", 0) == 0) name = name.substr(6);
  int status = std::atoi(name.c_str());
  return status >= 100 ? status : 200;
}
}  // namespace

std::string HeadersFileFor(const std::string& relative) {
  fs::path path(relative);
  std::string name = path.filename().string();
  for (const std::string& stem : {path.stem().string(), name.substr(0, name.find('.'))}) {
    fs::path candidate = path.parent_path() / (stem + ".headers.txt");
    if (fs::exists(WireDir() / candidate)) return candidate.generic_string();
  }
  return "";
}

HttpResponse FixtureResponse(const std::string& relative) {
  std::string headers = HeadersFileFor(relative);
  HttpResponse response;
  if (!headers.empty()) {
    response = ParseHeadersFile(ReadFile(WireDir() / headers));
  } else {
    response.status = StatusFromName(relative);
  }
  response.body = ReadFixture(relative);
  return response;
}

void FakeTransport::Push(Result<HttpResponse> reply) {
  std::lock_guard<std::mutex> lock(mu_);
  replies_.push_back(std::move(reply));
}

void FakeTransport::PushJson(int status, const std::string& body, std::vector<HttpHeader> headers) {
  headers.push_back({"content-type", "application/json"});
  Push(HttpResponse{status, std::move(headers), body});
}

Result<HttpResponse> FakeTransport::Post(const HttpRequest& request) {
  if (on_post) on_post();
  Result<HttpResponse> reply = Status::Internal("FakeTransport has no reply queued");
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(request);
    if (!replies_.empty()) {
      reply = replies_.front();
      if (replies_.size() > 1) replies_.pop_front();
    }
  }
  if (reply.ok() && request.on_body && reply->status >= 200 && reply->status < 300) {
    Feed(request, &*reply);
  }
  return reply;
}

// As a server streams: the body in pieces of at most `piece_bytes`, stopping where on_body asks.
void FakeTransport::Feed(const HttpRequest& request, HttpResponse* response) const {
  const std::string body = response->body;
  for (size_t at = 0; at < body.size(); at += piece_bytes) {
    if (request.on_body(std::string_view(body).substr(at, piece_bytes))) continue;
    response->body = body.substr(0, std::min(body.size(), at + piece_bytes));
    response->stopped = true;
    return;
  }
}

std::vector<HttpRequest> FakeTransport::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

int FakeTransport::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(requests_.size());
}

std::chrono::steady_clock::time_point FakeClock::Now() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::chrono::steady_clock::time_point() + offset_;
}

std::chrono::system_clock::time_point FakeClock::WallNow() {
  std::lock_guard<std::mutex> lock(mu_);
  // 2025-06-17T05:21:48Z, the date of the OpenAI 429 capture, plus the time slept.
  return std::chrono::system_clock::from_time_t(1750137708) + offset_;
}

void FakeClock::SleepFor(std::chrono::milliseconds duration) {
  std::lock_guard<std::mutex> lock(mu_);
  offset_ += duration;
  sleeps_.push_back(duration);
}

std::vector<std::chrono::milliseconds> FakeClock::sleeps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sleeps_;
}

LocalServer::LocalServer(Handler handler) {
  server_.Post(".*", [this, handler](const httplib::Request& request, httplib::Response& response) {
    ++hits_;
    handler(request, response);
  });
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

LocalServer::~LocalServer() {
  stopping_ = true;
  server_.stop();
  thread_.join();
}

void LocalServer::SleepUnlessStopping(std::chrono::milliseconds duration) const {
  auto until = std::chrono::steady_clock::now() + duration;
  while (!stopping_ && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int UnusedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

ClientEnv TestEnv(std::shared_ptr<HttpTransport> transport, FakeClock* clock, int max_attempts) {
  ClientEnv env;
  env.transport = std::move(transport);
  env.clock = clock;
  env.random01 = [] { return 0.0; };
  std::filesystem::path log = TestRoot() / "client.log";
  env.log = [log](std::string_view line) {
    std::ofstream(log, std::ios::app) << Redact(line) << "\n";
  };
  env.prices = std::shared_ptr<const PriceTable>(std::shared_ptr<void>(), &PriceTable::BuiltIn());
  env.ledger = std::make_shared<UsageLedger>();
  env.limiter = std::make_shared<ConcurrencyLimiter>(4);
  env.retry.max_attempts = max_attempts;
  env.retry.jitter = 0;
  return env;
}

ProviderSettings TestSettings(const std::string& provider, const std::string& model,
                              const std::string& base_url) {
  Result<ProviderSettings> settings = ParseModelSpec(provider + ":" + model);
  EXPECT_TRUE(settings.ok()) << settings.status().ToString();
  ProviderSettings out = settings.ok() ? *settings : ProviderSettings();
  if (!base_url.empty()) out.base_url = base_url;
  out.api_key_env = kTestKeyEnv;
  out.stream = false;  // The one-body shape; streaming tests set it.
  return out;
}

Secret TestKey() {
  setenv(kTestKeyEnv, kTestKey, 1);
  Result<Secret> key = LoadApiKey(kTestKeyEnv, "", true, "test");
  EXPECT_TRUE(key.ok());
  return key.ok() ? *key : Secret();
}

namespace {

// At the end of the program: no file any test wrote may contain the key.
class KeyLeakEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    // Local test servers must be reached directly, whatever proxy the machine uses.
    setenv("no_proxy", "127.0.0.1,localhost", 1);
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);
    TestKey();
  }

  void TearDown() override {
    for (const char* needle : {kTestKey, kTestKeyTail}) {
      std::vector<std::string> leaks = FilesContaining(TestRoot(), needle);
      EXPECT_TRUE(leaks.empty()) << "the API key leaked into " << ::testing::PrintToString(leaks);
    }
    if (!std::getenv("KFORGE_KEEP_TEST_OUTPUT")) fs::remove_all(TestRoot());
  }
};

// gtest's documented way to add an environment when main() comes from gtest_main.
[[maybe_unused]] ::testing::Environment* const kKeyLeakEnvironment =
    ::testing::AddGlobalTestEnvironment(new KeyLeakEnvironment);

}  // namespace

}  // namespace kforge::llm::testing
