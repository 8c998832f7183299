// Recording, replay and the response cache, through LlmSession with a fake transport.
#include "llm/transcript.h"

#include <gtest/gtest.h>

#include "kforge/llm/session.h"
#include "llm/cache.h"
#include "llm/replay.h"
#include "llm/test_util.h"

namespace kforge::llm {
namespace {

using testing::FakeClock;
using testing::FakeTransport;

std::string OpenAiAnswer(const std::string& text) {
  return R"({"id":"chatcmpl-x","model":"gpt-5","choices":[{"index":0,"message":{"role":)"
         R"("assistant","content":")" +
         text +
         R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2}})";
}

ChatRequest Ask(const std::string& question) {
  ChatRequest request;
  request.system = "You write kernels.";
  request.messages.push_back(Message::User(question));
  request.options.temperature = 0.0;
  return request;
}

class RecordReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::TestKey();
    dir_ = testing::NewTestDir("transcript");
  }

  std::unique_ptr<LlmSession> Session(LlmConfig config) {
    LlmDeps deps;
    deps.transport = transport_;
    deps.clock = &clock_;
    deps.log = [](std::string_view) {};
    config.providers["openai"].api_key_env = testing::kTestKeyEnv;
    Result<std::unique_ptr<LlmSession>> session = LlmSession::Create(config, deps);
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    return std::move(session).value();
  }

  std::unique_ptr<LlmClient> Client(LlmSession& session, const std::string& model) {
    Result<std::unique_ptr<LlmClient>> client = session.NewClient(model);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return std::move(client).value();
  }

  // Records two answers and an error into dir_/run.jsonl.
  std::filesystem::path RecordRun() {
    LlmConfig config;
    config.transcript = (dir_ / "run.jsonl").string();
    std::unique_ptr<LlmSession> session = Session(config);
    std::unique_ptr<LlmClient> client = Client(*session, "openai:gpt-5");
    transport_->PushJson(200, OpenAiAnswer("first"));
    transport_->PushJson(200, OpenAiAnswer("second"));
    transport_->PushJson(401, R"({"error":{"message":"bad key","code":"invalid_api_key"}})");
    EXPECT_TRUE(client->Complete(Ask("one")).ok());
    EXPECT_TRUE(client->Complete(Ask("two")).ok());
    EXPECT_FALSE(client->Complete(Ask("three")).ok());
    return config.transcript;
  }

  std::shared_ptr<FakeTransport> transport_ = std::make_shared<FakeTransport>();
  FakeClock clock_;
  std::filesystem::path dir_;
};

TEST_F(RecordReplayTest, GivenATranscriptEveryExchangeIsOneJsonLine) {
  std::filesystem::path path = RecordRun();
  Result<std::vector<TranscriptEntry>> entries = ReadTranscript(path);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].client, "openai:gpt-5");
  EXPECT_EQ((*entries)[0].seq, 0);
  EXPECT_EQ((*entries)[0].response->text, "first");
  EXPECT_EQ((*entries)[0].request["messages"][0]["parts"][0]["text"], "one");
  EXPECT_EQ((*entries)[0].request["system"], "You write kernels.");
  EXPECT_EQ((*entries)[1].response->usage.input_tokens, 10);
  EXPECT_FALSE((*entries)[2].response);
  EXPECT_EQ(LlmErrorKindOf((*entries)[2].error), LlmErrorKind::kAuth);
  std::string text = testing::ReadFile(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_NE(text.find("\"v\":1"), std::string::npos);
}

TEST_F(RecordReplayTest, GivenTheSameRequestsReplayServesTheRecordedAnswersInOrder) {
  std::filesystem::path path = RecordRun();
  int calls_while_recording = transport_->calls();
  std::unique_ptr<LlmSession> session = Session(LlmConfig());
  std::unique_ptr<LlmClient> replay = Client(*session, "replay:" + path.string());
  EXPECT_EQ(replay->Describe(), "replay:" + path.string());
  EXPECT_EQ(replay->Complete(Ask("one"))->text, "first");
  EXPECT_EQ(replay->Complete(Ask("two"))->text, "second");
  Result<ChatResponse> third = replay->Complete(Ask("three"));
  EXPECT_EQ(LlmErrorKindOf(third.status()), LlmErrorKind::kAuth);
  EXPECT_NE(third.status().message().find("bad key"), std::string::npos);
  Result<ChatResponse> fourth = replay->Complete(Ask("four"));
  EXPECT_EQ(LlmErrorKindOf(fourth.status()), LlmErrorKind::kReplayExhausted);
  EXPECT_NE(fourth.status().message().find("all 3 recorded exchanges were served"),
            std::string::npos);
  EXPECT_EQ(transport_->calls(), calls_while_recording) << "replay must not touch the network";
  EXPECT_EQ(session->ledger().Total().calls, 2);
  EXPECT_EQ(session->ledger().Total().usage.input_tokens, 20);
}

TEST_F(RecordReplayTest, GivenADifferentRequestReplayStopsAndNamesTheDifference) {
  std::filesystem::path path = RecordRun();
  std::unique_ptr<LlmSession> session = Session(LlmConfig());
  std::unique_ptr<LlmClient> replay = Client(*session, "replay:" + path.string());
  ASSERT_TRUE(replay->Complete(Ask("one")).ok());
  Result<ChatResponse> diverged = replay->Complete(Ask("TWO"));
  ASSERT_FALSE(diverged.ok());
  EXPECT_EQ(LlmErrorKindOf(diverged.status()), LlmErrorKind::kReplayDivergence);
  EXPECT_NE(diverged.status().message().find(
                "request 2 of 3 differs from the recording at messages[0].parts[0].text: "
                "recorded \"two\", now \"TWO\""),
            std::string::npos)
      << diverged.status().message();
  ChatRequest hotter = Ask("two");
  hotter.options.temperature = 0.7;
  EXPECT_NE(replay->Complete(hotter).status().message().find("options.temperature"),
            std::string::npos);
  EXPECT_EQ(replay->Complete(Ask("two"))->text, "second") << "a divergence does not advance";
}

TEST_F(RecordReplayTest, GivenAMissingOrBrokenTranscriptReplayFailsToStart) {
  std::unique_ptr<LlmSession> session = Session(LlmConfig());
  EXPECT_FALSE(session->NewClient("replay:" + (dir_ / "none.jsonl").string()).ok());
  testing::WriteFile(dir_ / "broken.jsonl", "{\"v\":1,\"request\":{}}\nnot json\n");
  Result<std::unique_ptr<LlmClient>> broken =
      session->NewClient("replay:" + (dir_ / "broken.jsonl").string());
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("broken.jsonl:1"), std::string::npos)
      << broken.status().message();
}

TEST_F(RecordReplayTest, GivenImagesTheTranscriptHoldsTheirHashNotTheirBytes) {
  ChatRequest request = Ask("what is this?");
  std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string(1000, 'Z');
  request.messages[0].parts.push_back(ContentPart::Image("image/png", png));
  Json json = RequestToJson(request);
  const Json& image = json["messages"][0]["parts"][1]["image"];
  EXPECT_EQ(image["mime_type"], "image/png");
  EXPECT_EQ(image["bytes"], 1008);
  EXPECT_EQ(image["xxh128"], Xxh128Hex(png));
  EXPECT_EQ(json.dump().find("ZZZZZZZZ"), std::string::npos);
}

// What agents ask before attaching images (the analyst's profile images): the model's `vision`
// through the recording and cache layers; for replay, whether the recording holds an image.
TEST_F(RecordReplayTest, GivenEachClientStackAcceptsImagesSaysWhatTheModelOrRecordingTakes) {
  const std::filesystem::path text_only = RecordRun();
  transport_ = std::make_shared<FakeTransport>();  // RecordRun's last reply stays queued
  LlmConfig config;
  config.transcript = (dir_ / "images.jsonl").string();
  config.cache_dir = (dir_ / "cache").string();
  std::unique_ptr<LlmSession> session = Session(config);
  std::unique_ptr<LlmClient> client = Client(*session, "openai:gpt-5");
  EXPECT_TRUE(client->AcceptsImages());  // the cloud preset's default
  ChatRequest request = Ask("what is this?");
  request.messages[0].parts.push_back(
      ContentPart::Image("image/png", std::string("\x89PNG\r\n\x1a\n", 8) + "pixels"));
  transport_->PushJson(200, OpenAiAnswer("a roofline"));
  Result<ChatResponse> answer = client->Complete(request);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  config.providers["openai"].vision = false;
  EXPECT_FALSE(Client(*Session(config), "openai:gpt-5")->AcceptsImages());

  std::unique_ptr<LlmSession> replaying = Session(LlmConfig());
  EXPECT_TRUE(Client(*replaying, "replay:" + config.transcript)->AcceptsImages());
  EXPECT_FALSE(Client(*replaying, "replay:" + text_only.string())->AcceptsImages());
}

TEST(FirstDifferenceTest, NamesThePathOfTheFirstDifference) {
  Json a = {{"a", {1, 2, 3}}, {"b", "x"}};
  EXPECT_EQ(FirstDifference(a, a), "");
  EXPECT_EQ(FirstDifference(a, {{"a", {1, 2, 4}}, {"b", "x"}}), "a[2]: recorded 3, now 4");
  EXPECT_EQ(FirstDifference(a, {{"a", {1, 2}}, {"b", "x"}}), "a: recorded 3 items, now 2");
  EXPECT_EQ(FirstDifference(a, {{"a", {1, 2, 3}}}), "b: recorded \"x\", now (absent)");
  EXPECT_EQ(FirstDifference(1, "1"), "(whole request): recorded 1, now \"1\"");
}

TEST(ResponseJsonTest, RoundTripsEveryField) {
  ChatResponse response;
  response.text = "t";
  response.reasoning = "r";
  response.finish_reason = FinishReason::kLength;
  response.raw_finish_reason = "max_tokens";
  response.usage = Usage{1, 2, 3, 4, 5};
  response.cost_usd = 0.5;
  response.latency = std::chrono::milliseconds(12);
  response.total_time = std::chrono::milliseconds(34);
  response.request_id = "req";
  response.model = "m";
  response.attempts = 2;
  Result<ChatResponse> back = ResponseFromJson(ResponseToJson(response));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ResponseToJson(*back), ResponseToJson(response));
  EXPECT_FALSE(ResponseFromJson(Json::object()).ok());
}

class CacheTest : public RecordReplayTest {};

TEST_F(CacheTest, GivenTheSameRequestTwiceTheSecondComesFromTheCache) {
  LlmConfig config;
  config.cache_dir = (dir_ / "cache").string();
  std::unique_ptr<LlmSession> session = Session(config);
  std::unique_ptr<LlmClient> client = Client(*session, "openai:gpt-5");
  transport_->PushJson(200, OpenAiAnswer("cached answer"));
  Result<ChatResponse> first = client->Complete(Ask("q"));
  Result<ChatResponse> second = client->Complete(Ask("q"));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_FALSE(first->from_cache);
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(second->text, "cached answer");
  EXPECT_EQ(second->cost_usd, 0.0);
  EXPECT_EQ(transport_->calls(), 1);
  EXPECT_EQ(session->ledger().Total().calls, 1);
  EXPECT_EQ(session->ledger().Total().cache_hits, 1);
  // A new session over the same folder hits too.
  std::unique_ptr<LlmSession> later = Session(config);
  EXPECT_TRUE(Client(*later, "openai:gpt-5")->Complete(Ask("q"))->from_cache);
  EXPECT_EQ(transport_->calls(), 1);
}

TEST_F(CacheTest, GivenAnyDifferenceInTheRequestItMisses) {
  LlmConfig config;
  config.cache_dir = (dir_ / "cache").string();
  std::unique_ptr<LlmSession> session = Session(config);
  transport_->PushJson(200, OpenAiAnswer("a"));
  std::unique_ptr<LlmClient> client = Client(*session, "openai:gpt-5");
  ChatRequest base = Ask("q");
  ASSERT_TRUE(client->Complete(base).ok());
  ChatRequest other_temperature = base;
  other_temperature.options.temperature = 0.5;
  ChatRequest with_image = base;
  with_image.messages[0].parts.push_back(ContentPart::Image("image/png", "\x89PNG\r\n\x1a\n1"));
  ChatRequest other_image = base;
  other_image.messages[0].parts.push_back(ContentPart::Image("image/png", "\x89PNG\r\n\x1a\n2"));
  for (const ChatRequest& request : {other_temperature, with_image, other_image}) {
    EXPECT_FALSE(client->Complete(request)->from_cache);
  }
  EXPECT_FALSE(Client(*session, "openai:gpt-5-mini")->Complete(base)->from_cache);
  EXPECT_EQ(transport_->calls(), 5);
}

TEST_F(CacheTest, GivenAnErrorNothingIsCached) {
  LlmConfig config;
  config.cache_dir = (dir_ / "cache").string();
  std::unique_ptr<LlmSession> session = Session(config);
  transport_->PushJson(400, R"({"error":{"message":"no"}})");
  std::unique_ptr<LlmClient> client = Client(*session, "openai:gpt-5");
  EXPECT_FALSE(client->Complete(Ask("q")).ok());
  EXPECT_FALSE(client->Complete(Ask("q")).ok());
  EXPECT_EQ(transport_->calls(), 2);
}

TEST_F(CacheTest, GivenRecordingAndCacheTheTranscriptShowsTheHit) {
  LlmConfig config;
  config.cache_dir = (dir_ / "cache").string();
  config.transcript = (dir_ / "run.jsonl").string();
  std::unique_ptr<LlmSession> session = Session(config);
  transport_->PushJson(200, OpenAiAnswer("a"));
  std::unique_ptr<LlmClient> client = Client(*session, "openai:gpt-5");
  ASSERT_TRUE(client->Complete(Ask("q")).ok());
  ASSERT_TRUE(client->Complete(Ask("q")).ok());
  Result<std::vector<TranscriptEntry>> entries = ReadTranscript(config.transcript);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_FALSE((*entries)[0].response->from_cache);
  EXPECT_TRUE((*entries)[1].response->from_cache);
}

}  // namespace
}  // namespace kforge::llm
