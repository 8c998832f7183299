// Streamed answers: the repetition rule, StreamWatch through HttpLlmClient over the fake
// transport (llama.cpp's captured stream, Anthropic's), a repeating answer stopped, and the curl
// transport's idle limit against a local server that goes quiet mid-answer.
#include "llm/stream_watch.h"

#include <gtest/gtest.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "kforge/llm/session.h"
#include "llm/client.h"
#include "llm/test_util.h"

namespace kforge::llm {
namespace {

using std::chrono::milliseconds;
using testing::FakeClock;
using testing::FakeTransport;
using testing::LocalServer;

std::string Repeat(std::string_view block, size_t times) {
  std::string out;
  for (size_t i = 0; i < times; ++i) out += block;
  return out;
}

TEST(RepeatedTailStartTest, GivenABlockRepeatedOverTheSpanItFindsWhereTheSecondCopyStarts) {
  const std::string head = "```cpp\nvoid kf_run() {\n";
  const std::string block = "  x = x + 1;  // again\n";  // 23 characters
  const std::string text = head + Repeat(block, 40);
  size_t cut = RepeatedTailStart(text);
  ASSERT_NE(cut, std::string_view::npos);
  // What is kept is the head and one copy of the block (give or take the characters at the
  // seam that the head shares with the block's end).
  const std::string kept = text.substr(0, cut);
  EXPECT_EQ(kept.substr(0, head.size() - 1), head.substr(0, head.size() - 1));
  EXPECT_NE(kept.find("x = x + 1;  // again"), std::string::npos);
  EXPECT_EQ(kept.find("x = x + 1;  // again"), kept.rfind("x = x + 1;  // again")) << kept;
  EXPECT_LE(kept.size(), head.size() + block.size());
}

TEST(RepeatedTailStartTest, GivenOrdinaryOrUnrolledCodeItFindsNothing) {
  std::string unrolled = "```cpp\n";
  for (int i = 0; i < 64; ++i) {
    unrolled += "  acc" + std::to_string(i % 8) + " += a[i + " + std::to_string(i) + "] * b[i + " +
                std::to_string(i) + "];\n";
  }
  EXPECT_EQ(RepeatedTailStart(unrolled), std::string_view::npos);
  // Repeated, but shorter than the span: not yet a loop.
  EXPECT_EQ(RepeatedTailStart(Repeat("}\n", 100)), std::string_view::npos);
  EXPECT_EQ(RepeatedTailStart(""), std::string_view::npos);
}

TEST(RepeatedTailStartTest, GivenALongBlockItNeedsThreeCopies) {
  std::string block;
  for (int i = 0; i < 300; ++i) block += static_cast<char>('a' + (i * 7) % 26);
  EXPECT_EQ(RepeatedTailStart("intro " + Repeat(block, 2)), std::string_view::npos);
  EXPECT_NE(RepeatedTailStart("intro " + Repeat(block, 3)), std::string_view::npos);
}

// OpenAI-style chunks whose content pieces are `pieces`, then a finish and a usage chunk.
std::string OpenAiStream(const std::vector<std::string>& pieces, bool finish) {
  std::string body;
  for (const std::string& piece : pieces) {
    nlohmann::json chunk = {{"id", "c1"},
                            {"model", "m"},
                            {"choices", {{{"index", 0}, {"delta", {{"content", piece}}}}}}};
    body += "data: " + chunk.dump() + "\n\n";
  }
  if (!finish) return body;
  body += R"(data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})" "\n\n";
  body += R"(data: {"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":)" +
          std::to_string(pieces.size()) + "}}\n\n";
  return body + "data: [DONE]\n\n";
}

class StreamClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<LlmClient> Client(const std::string& provider, const std::string& model) {
    env_ = testing::TestEnv(transport_, clock_.get(), 1);
    ProviderSettings settings = testing::TestSettings(provider, model);
    settings.stream = true;
    return NewHttpClient(settings, testing::TestKey(), env_);
  }

  void PushStream(const std::string& body) {
    HttpResponse response;
    response.status = 200;
    response.headers = {{"content-type", "text/event-stream"}};
    response.body = body;
    transport_->Push(response);
  }

  ChatRequest Request() {
    ChatRequest request{"You write C++.", {Message::User("sum an array")}, {}};
    request.on_progress = [this](const StreamProgress& p) { progress_.push_back(p); };
    return request;
  }

  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  std::unique_ptr<FakeClock> clock_ = std::make_unique<FakeClock>();
  ClientEnv env_;
  std::vector<StreamProgress> progress_;
};

TEST_F(StreamClientTest, GivenLlamaCppsCapturedStreamItReadsTheAnswerUsageAndServerTime) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  PushStream(testing::ReadFixture("llamacpp/chat_stream_response.sse"));
  Result<ChatResponse> r = Client("local", "qwen2.5-coder-1.5b")->Complete(Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->streamed);
  EXPECT_EQ(r->text.substr(0, 7), "```cpp\n");
  EXPECT_EQ(r->finish_reason, FinishReason::kStop);
  EXPECT_EQ(r->usage.input_tokens, 39);
  EXPECT_EQ(r->usage.output_tokens, 53);
  EXPECT_EQ(r->usage.cached_input_tokens, 38);
  EXPECT_FALSE(r->usage_estimated);
  ASSERT_TRUE(r->server_time);
  EXPECT_EQ(r->server_time->count(), 15558);  // 162.301 + 15395.83 ms
  ASSERT_FALSE(progress_.empty());
  EXPECT_EQ(progress_.front().tokens, 1);  // The first piece is always reported.
  ASSERT_EQ(transport_->requests().size(), 1u);
  EXPECT_TRUE(transport_->requests()[0].idle_timeout.count() > 0);
}

TEST_F(StreamClientTest, GivenAServerThatIgnoresStreamItReadsThePlainAnswer) {
  transport_->PushJson(200, R"({"id":"x","model":"m","choices":[{"index":0,"message":)"
                            R"({"role":"assistant","content":"plain"},"finish_reason":"stop"}],)"
                            R"("usage":{"prompt_tokens":3,"completion_tokens":1}})");
  Result<ChatResponse> r = Client("local", "m")->Complete(Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "plain");
  EXPECT_FALSE(r->streamed);
}

TEST_F(StreamClientTest, GivenAnAnswerThatRepeatsItselfItIsStoppedAndCut) {
  std::vector<std::string> pieces = {"```cpp\n", "void kf_run() {\n"};
  for (int i = 0; i < 2000; ++i) pieces.push_back("  step();\n");
  const std::string body = OpenAiStream(pieces, true);
  PushStream(body);
  Result<ChatResponse> r = Client("local", "m")->Complete(Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->finish_reason, FinishReason::kRepetition);
  EXPECT_EQ(FinishReasonName(r->finish_reason), "repetition");
  // Stopped soon after the loop began, not at the end of the 2000 lines.
  EXPECT_LT(r->text.size(), 2000u);
  EXPECT_EQ(r->text.substr(0, 23), "```cpp\nvoid kf_run() {\n");
  EXPECT_EQ(r->text.find("  step();\n  step();\n"), std::string::npos) << "one copy is kept";
  EXPECT_TRUE(r->usage_estimated);
  EXPECT_GT(r->usage.output_tokens, 0);
  EXPECT_LT(r->usage.output_tokens, 200);
  EXPECT_GT(r->usage.input_tokens, 0);
}

TEST_F(StreamClientTest, GivenRepetitionStopOffTheWholeAnswerArrives) {
  std::vector<std::string> pieces(300, "ab");
  PushStream(OpenAiStream(pieces, true));
  env_ = testing::TestEnv(transport_, clock_.get(), 1);
  ProviderSettings settings = testing::TestSettings("local", "m");
  settings.stream = true;
  settings.stop_on_repetition = false;
  Result<ChatResponse> r = NewHttpClient(settings, testing::TestKey(), env_)->Complete(Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->finish_reason, FinishReason::kStop);
  EXPECT_EQ(r->text.size(), 600u);
}

TEST_F(StreamClientTest, GivenAStreamCutBeforeItsFinishItIsABadResponse) {
  PushStream(OpenAiStream({"```cpp\n", "int x;"}, false));
  Result<ChatResponse> r = Client("local", "m")->Complete(Request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(LlmErrorKindOf(r.status()), LlmErrorKind::kBadResponse) << r.status().message();
}

TEST_F(StreamClientTest, GivenAnErrorEventMidStreamItIsThatError) {
  PushStream(OpenAiStream({"```cpp\n"}, false) +
             R"(data: {"error":{"message":"the model crashed","type":"server_error"}})" "\n\n");
  Result<ChatResponse> r = Client("local", "m")->Complete(Request());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the model crashed"), std::string::npos);
}

TEST_F(StreamClientTest, GivenAnthropicsCapturedStreamItReadsTheAnswer) {
  KF_SKIP_WITHOUT_WIRE_FIXTURES();
  const std::string body = testing::ReadFixture("anthropic/stream_basic_captured.sse");
  PushStream(body);
  Result<ChatResponse> r = Client("anthropic", "claude-sonnet-4-5")->Complete(Request());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Reply whole = NewWire(WireFormat::kAnthropic)->ParseStream(body);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(r->text, whole.response->text);
  EXPECT_EQ(r->usage, whole.response->usage);
  EXPECT_TRUE(r->streamed);
}

// Over a real socket: events in small pieces with pauses between them.
class StreamServerTest : public ::testing::Test {
 protected:
  std::unique_ptr<LlmSession> Session(const std::string& url, double idle_s) {
    std::string toml = "[models.quiet]\nprovider = \"local\"\nmodel = \"m\"\nbase_url = \"" + url +
                       "/v1\"\nidle_timeout_s = " + std::to_string(idle_s) +
                       "\n[retry]\nmax_attempts = 1\n";
    Result<LlmConfig> config = ParseLlmConfig(toml, "test", testing::TestRoot());
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    Result<std::unique_ptr<LlmSession>> session = LlmSession::Create(config.ok() ? *config : LlmConfig());
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    return session.ok() ? std::move(*session) : nullptr;
  }
};

TEST_F(StreamServerTest, GivenAServerThatGoesQuietMidAnswerTheIdleLimitEndsTheCall) {
  const std::string first = OpenAiStream({"```cpp\n", "int"}, false);
  LocalServer* self = nullptr;
  LocalServer server([&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
      sink.write(first.data(), first.size());
      self->SleepUnlessStopping(milliseconds(20000));  // Alive, but silent.
      sink.done();
      return true;
    });
  });
  self = &server;
  std::unique_ptr<LlmSession> session = Session(server.url(), 1.0);
  Result<std::unique_ptr<LlmClient>> client = session->NewClient("quiet");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const auto start = std::chrono::steady_clock::now();
  Result<ChatResponse> r = (*client)->Complete(ChatRequest{"", {Message::User("hi")}, {}});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(LlmErrorKindOf(r.status()), LlmErrorKind::kTimeout) << r.status().message();
  EXPECT_NE(r.status().message().find("stopped arriving"), std::string::npos)
      << r.status().message();
  EXPECT_LT(seconds, 8.0) << "the idle limit (1 s), not the 20 s silence, ended the call";
}

TEST_F(StreamServerTest, GivenAStreamInPiecesTheAnswerAndItsProgressArrive) {
  std::vector<std::string> pieces;
  for (int i = 0; i < 12; ++i) pieces.push_back("line " + std::to_string(i) + "\n");
  const std::string body = OpenAiStream(pieces, true);
  LocalServer* self = nullptr;
  LocalServer server([&](const httplib::Request& request, httplib::Response& response) {
    EXPECT_NE(request.body.find("\"stream\":true"), std::string::npos);
    response.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
      for (size_t at = 0; at < body.size(); at += 50) {
        sink.write(body.data() + at, std::min<size_t>(50, body.size() - at));
        self->SleepUnlessStopping(milliseconds(5));
      }
      sink.done();
      return true;
    });
  });
  self = &server;
  std::unique_ptr<LlmSession> session = Session(server.url(), 5.0);
  Result<std::unique_ptr<LlmClient>> client = session->NewClient("quiet");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<StreamProgress> progress;
  ChatRequest request{"", {Message::User("hi")}, {}};
  request.on_progress = [&](const StreamProgress& p) { progress.push_back(p); };
  Result<ChatResponse> r = (*client)->Complete(request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text.substr(0, 7), "line 0\n");
  EXPECT_EQ(r->usage.output_tokens, 12);
  EXPECT_TRUE(r->streamed);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.front().tokens, 1);
}

}  // namespace
}  // namespace kforge::llm
