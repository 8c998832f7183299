// TEST FIXTURE for the loop's tests (forge_test.cc, forge_transfer_test.cc): ScriptedModelServer,
// a stand-in for a model provider. It is not a model and contacts nothing: it answers POST
// /v1/chat/completions (OpenAI Chat Completions, as vLLM and the other OpenAI-compatible servers
// speak it) or POST /v1/messages (Anthropic Messages) with the next answer of its script, in the
// documented response format (src/llm/testdata) with usage numbers and a request id, and records
// every request. One request (by arrival index) can be held unanswered until Release(), so that
// a test can kill the client while a call is in flight; a held request consumes no answer and is
// never answered. ClientFor makes a real client (kforge's LlmSession) that talks to it.
// Thread-safety: the server answers on its own threads; its accessors lock.
// Answers written by a test are the test's script, never a model's output.
#ifndef KFORGE_LOOP_SCRIPTED_MODEL_SERVER_H_
#define KFORGE_LOOP_SCRIPTED_MODEL_SERVER_H_

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kforge/llm/config.h"
#include "kforge/llm/session.h"
#include "llm/test_util.h"

namespace kforge {

enum class Protocol { kOpenAiChat, kAnthropicMessages };

class ScriptedModelServer {
 public:
  using json = nlohmann::json;

  struct Exchange {
    std::string path, system, prompt;  // prompt: the messages' texts, joined
    std::string auth;                  // Authorization or x-api-key header
    std::string anthropic_version;
    bool answered = false;
    bool streamed = false;  // the request asked for a stream, and got one
    std::string request_id;
    llm::Usage usage;   // as kforge normalises it (docs/llm.md, "Usage is normalised")
    json body;          // the request as sent
    int64_t chars = 0;  // bytes of the system prompt and the messages' texts
  };

  ScriptedModelServer(Protocol protocol, std::vector<std::string> script)
      : protocol_(protocol),
        script_(std::move(script)),
        server_([this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); }) {
  }

  std::string base_url() const { return server_.url() + "/v1"; }
  void HoldRequest(int index) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = index;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::vector<Exchange> exchanges() const {
    std::lock_guard<std::mutex> lock(mu_);
    return exchanges_;
  }
  std::vector<Exchange> answered() const {
    std::vector<Exchange> out;
    for (const Exchange& e : exchanges())
      if (e.answered) out.push_back(e);
    return out;
  }
  int received() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(exchanges_.size());
  }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    std::string want = protocol_ == Protocol::kOpenAiChat ? "/v1/chat/completions" : "/v1/messages";
    if (req.path != want) {
      res.status = 404;
      res.set_content(
          R"({"error": {"message": "scripted server: unknown path", "type": "not_found"}})",
          "application/json");
      return;
    }
    Exchange e = ParseRequest(req);
    std::unique_lock<std::mutex> lock(mu_);
    size_t index = exchanges_.size();
    exchanges_.push_back(e);
    if (static_cast<int>(index) == hold_ && !released_) {
      while (!released_ && !server_.stopping()) cv_.wait_for(lock, std::chrono::milliseconds(10));
      res.status = 503;  // the client is gone by now
      res.set_content(R"({"error": {"message": "held request released", "type": "overloaded"}})",
                      "application/json");
      return;
    }
    if (next_answer_ >= script_.size()) {
      res.status = 400;  // not retried: the test fails with this message
      res.set_content(
          R"({"error": {"message": "scripted server: the script is exhausted", "type": "invalid_request_error"}})",
          "application/json");
      return;
    }
    size_t k = next_answer_++;
    Exchange& rec = exchanges_[index];
    rec.answered = true;
    rec.request_id = "req-scripted-" + std::to_string(k);
    res.set_header(protocol_ == Protocol::kOpenAiChat ? "x-request-id" : "request-id",
                   rec.request_id);
    json reply = Reply(k, script_[k], &rec.usage);
    rec.streamed = e.body.value("stream", false);
    if (rec.streamed) {
      res.set_content(Stream(reply), "text/event-stream");
    } else {
      res.set_content(reply.dump(), "application/json");
    }
  }

  // The answer as the provider streams it: the text in pieces of 16 characters.
  std::string Stream(const json& reply) const {
    auto event = [](const json& data, const std::string& type = "") {
      return (type.empty() ? "" : "event: " + type + "\n") + "data: " + data.dump() + "\n\n";
    };
    std::vector<std::string> pieces;
    std::string text = protocol_ == Protocol::kOpenAiChat
                           ? reply["choices"][0]["message"]["content"].get<std::string>()
                           : reply["content"][0]["text"].get<std::string>();
    for (size_t at = 0; at < text.size(); at += 16) pieces.push_back(text.substr(at, 16));
    std::string out;
    if (protocol_ == Protocol::kOpenAiChat) {
      json head = {
          {"id", reply["id"]}, {"object", "chat.completion.chunk"}, {"model", reply["model"]}};
      for (const std::string& piece : pieces) {
        json chunk = head;
        chunk["choices"] = {
            {{"index", 0}, {"delta", {{"content", piece}}}, {"finish_reason", nullptr}}};
        out += event(chunk);
      }
      json finish = head;
      finish["choices"] = {{{"index", 0}, {"delta", json::object()}, {"finish_reason", "stop"}}};
      json usage = head;
      usage["choices"] = json::array();
      usage["usage"] = reply["usage"];
      return out + event(finish) + event(usage) + "data: [DONE]\n\n";
    }
    json start_usage = reply["usage"];
    start_usage["output_tokens"] = 1;
    json message = {{"id", reply["id"]},       {"type", "message"},        {"role", "assistant"},
                    {"model", reply["model"]}, {"content", json::array()}, {"usage", start_usage}};
    out += event({{"type", "message_start"}, {"message", message}}, "message_start");
    out += event({{"type", "content_block_start"},
                  {"index", 0},
                  {"content_block", {{"type", "text"}, {"text", ""}}}},
                 "content_block_start");
    for (const std::string& piece : pieces)
      out += event({{"type", "content_block_delta"},
                    {"index", 0},
                    {"delta", {{"type", "text_delta"}, {"text", piece}}}},
                   "content_block_delta");
    out += event({{"type", "content_block_stop"}, {"index", 0}}, "content_block_stop");
    out += event({{"type", "message_delta"},
                  {"delta", {{"stop_reason", "end_turn"}}},
                  {"usage", {{"output_tokens", reply["usage"]["output_tokens"]}}}},
                 "message_delta");
    return out + event({{"type", "message_stop"}}, "message_stop");
  }

  Exchange ParseRequest(const httplib::Request& req) const {
    Exchange e;
    e.path = req.path;
    e.auth = protocol_ == Protocol::kOpenAiChat ? req.get_header_value("Authorization")
                                                : req.get_header_value("x-api-key");
    e.anthropic_version = req.get_header_value("anthropic-version");
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object()) return e;
    e.body = body;
    auto text_of = [](const json& content) {
      if (content.is_string()) return content.get<std::string>();
      std::string out;
      for (const json& part : content.is_array() ? content : json::array())
        if (part.contains("text")) out += part["text"].get<std::string>();
      return out;
    };
    if (body.contains("system")) e.system = text_of(body["system"]);
    e.chars = static_cast<int64_t>(e.system.size());
    for (const json& m : body.value("messages", json::array())) {
      if (m.value("role", "") == "system" || m.value("role", "") == "developer")
        e.system += text_of(m["content"]);
      else
        e.prompt += text_of(m["content"]) + "\n";
      e.chars += static_cast<int64_t>(text_of(m["content"]).size());
    }
    return e;
  }

  // The k-th answer with distinct usage numbers, so that sums can be checked.
  json Reply(size_t k, const std::string& text, llm::Usage* usage) const {
    int64_t in = 1200 + 10 * k, out = 300 + 7 * k, cached = 64 * k;
    if (protocol_ == Protocol::kOpenAiChat) {
      *usage = {in, cached, 0, out, 0};
      return {{"id", "chatcmpl-scripted-" + std::to_string(k)},
              {"object", "chat.completion"},
              {"created", 1750000000},
              {"model", "scripted-kernel-model"},
              {"choices",
               {{{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}}},
                 {"logprobs", nullptr},
                 {"finish_reason", "stop"}}}},
              {"usage",
               {{"prompt_tokens", in},
                {"completion_tokens", out},
                {"total_tokens", in + out},
                {"prompt_tokens_details", {{"cached_tokens", cached}}},
                {"completion_tokens_details", {{"reasoning_tokens", 0}}}}}};
    }
    int64_t written = k == 0 ? 512 : 0;
    *usage = {in + cached + written, cached, written, out, 0};
    return {{"id", "msg_scripted_" + std::to_string(k)},
            {"type", "message"},
            {"role", "assistant"},
            {"model", "claude-sonnet-4-5"},
            {"content", {{{"type", "text"}, {"text", text}}}},
            {"stop_reason", "end_turn"},
            {"stop_sequence", nullptr},
            {"usage",
             {{"input_tokens", in},
              {"cache_creation_input_tokens", written},
              {"cache_read_input_tokens", cached},
              {"output_tokens", out}}}};
  }

  const Protocol protocol_;
  const std::vector<std::string> script_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Exchange> exchanges_;
  size_t next_answer_ = 0;
  int hold_ = -1;
  bool released_ = false;
  llm::testing::LocalServer server_;  // last: stopped before the members its handler uses
};

inline bool IsGenerator(const ScriptedModelServer::Exchange& e) {
  return e.system.find("generation agent of kforge") != std::string::npos;
}
inline bool IsAnalyst(const ScriptedModelServer::Exchange& e) {
  return e.system.find("performance-analysis agent") != std::string::npos;
}
inline std::vector<ScriptedModelServer::Exchange> Generations(
    const std::vector<ScriptedModelServer::Exchange>& all) {
  std::vector<ScriptedModelServer::Exchange> out;
  for (const auto& e : all)
    if (IsGenerator(e)) out.push_back(e);
  return out;
}

struct ScriptedClient {
  std::unique_ptr<llm::LlmSession> session;
  std::unique_ptr<llm::LlmClient> client;
  std::string model;
};

// A real client (curl, retries, accounting) for the scripted server: the OpenAI-compatible preset
// with the server's URL, or the Anthropic preset with its base_url overridden by the config.
// `vision` is the config's `vision` key for that preset (unset: the preset's default, no for
// openai-compat, yes for anthropic).
inline ScriptedClient ClientFor(const ScriptedModelServer& server, Protocol protocol,
                                std::optional<bool> vision = std::nullopt) {
  ScriptedClient c;
  llm::LlmConfig config;
  config.providers[protocol == Protocol::kOpenAiChat ? "openai-compat" : "anthropic"].vision =
      vision;
  if (protocol == Protocol::kOpenAiChat) {
    c.model = "openai-compat:scripted-kernel-model@" + server.base_url();
  } else {
    config.providers["anthropic"].base_url = server.base_url();
    config.providers["anthropic"].api_key_env = std::string(llm::testing::kTestKeyEnv);
    c.model = "anthropic:claude-sonnet-4-5";
  }
  Result<std::unique_ptr<llm::LlmSession>> s = llm::LlmSession::Create(config);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return c;
  c.session = std::move(*s);
  Result<std::unique_ptr<llm::LlmClient>> client = c.session->NewClient(c.model);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  if (client.ok()) c.client = std::move(*client);
  return c;
}

}  // namespace kforge

#endif  // KFORGE_LOOP_SCRIPTED_MODEL_SERVER_H_
