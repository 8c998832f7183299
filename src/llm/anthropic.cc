// Anthropic Messages (POST {base_url}/messages, base_url "https://api.anthropic.com/v1").
//
// Request: {"model", "max_tokens" (required), "system", "messages": [{"role", "content"}],
// "temperature", "stop_sequences", "thinking": {"type":"enabled","budget_tokens"}}. A text-only
// single-part message has a string "content"; otherwise blocks {"type":"text","text"} and
// {"type":"image","source":{"type":"base64","media_type","data"}}.
// Headers: "x-api-key", "anthropic-version: 2023-06-01".
//
// Response: {"id","model","content":[{"type":"text"|"thinking"|...}],"stop_reason","usage":
// {input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens}}. The
// API's input_tokens excludes cache reads and writes; Usage::input_tokens is their sum.
// Errors: {"type":"error","error":{"type","message"},"request_id"?}.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "llm/json_util.h"
#include "llm/sse.h"
#include "llm/wire.h"

namespace kforge::llm {

namespace {

constexpr int kMinThinkingBudget = 1024;  // The API's minimum budget_tokens.

int ThinkingBudget(ReasoningEffort effort) {
  switch (effort) {
    case ReasoningEffort::kMinimal:
      return 1024;
    case ReasoningEffort::kLow:
      return 2048;
    case ReasoningEffort::kMedium:
      return 8192;
    case ReasoningEffort::kHigh:
      return 24576;
    default:
      return 0;
  }
}

Json BlockOf(const ContentPart& part) {
  if (!part.is_image()) return {{"type", "text"}, {"text", part.text}};
  return {
      {"type", "image"},
      {"source",
       {{"type", "base64"}, {"media_type", part.mime_type}, {"data", Base64Encode(part.data)}}}};
}

Json ContentOf(const Message& message) {
  if (message.parts.size() == 1 && !message.parts[0].is_image()) return message.parts[0].text;
  Json blocks = Json::array();
  for (const ContentPart& part : message.parts) blocks.push_back(BlockOf(part));
  return blocks;
}

// Sets max_tokens and thinking. Thinking tokens count against max_tokens, so with thinking on
// and no explicit limit, max_tokens = budget + the usual answer allowance.
Status SetLimits(const ChatOptions& options, const ProviderSettings& settings, Json* body) {
  int budget = ThinkingBudget(options.reasoning_effort);
  int max_tokens = options.max_output_tokens.value_or(settings.default_max_output_tokens + budget);
  (*body)["max_tokens"] = max_tokens;
  if (budget == 0) return Status::Ok();
  if (options.temperature) {
    return MakeLlmError(LlmErrorKind::kBadRequest, "anthropic",
                        "extended thinking (reasoning_effort) cannot be combined with "
                        "temperature; unset one of them");
  }
  if (max_tokens <= kMinThinkingBudget) {
    return MakeLlmError(LlmErrorKind::kBadRequest, "anthropic",
                        "reasoning_effort needs max_output_tokens above 1024 (thinking budget "
                        "minimum); raise it or set reasoning_effort = \"none\"");
  }
  // An explicit limit below the effort's budget halves it: part thinking, part answer.
  if (budget >= max_tokens) budget = std::max(kMinThinkingBudget, max_tokens / 2);
  (*body)["thinking"] = {{"type", "enabled"}, {"budget_tokens", budget}};
  return Status::Ok();
}

Result<Json> BodyOf(const ChatRequest& request, const ProviderSettings& settings) {
  const ChatOptions& options = request.options;
  Json body = {{"model", options.model}};
  KF_RETURN_IF_ERROR(SetLimits(options, settings, &body));
  if (!request.system.empty()) body["system"] = request.system;
  Json messages = Json::array();
  for (const Message& message : request.messages) {
    const char* role = message.role == Role::kUser ? "user" : "assistant";
    messages.push_back({{"role", role}, {"content", ContentOf(message)}});
  }
  body["messages"] = std::move(messages);
  if (options.temperature) body["temperature"] = *options.temperature;
  if (!options.stop.empty()) body["stop_sequences"] = options.stop;
  if (settings.stream) body["stream"] = true;
  return body;
}

FinishReason FinishReasonOf(std::string_view reason) {
  if (reason.empty()) return FinishReason::kUnknown;
  if (reason == "end_turn") return FinishReason::kStop;
  if (reason == "max_tokens" || reason == "model_context_window_exceeded") {
    return FinishReason::kLength;
  }
  if (reason == "stop_sequence") return FinishReason::kStopSequence;
  if (reason == "tool_use") return FinishReason::kToolCalls;
  if (reason == "refusal") return FinishReason::kContentFilter;
  return FinishReason::kOther;  // pause_turn and future reasons.
}

void SetFinish(std::string_view raw, ChatResponse* response) {
  response->raw_finish_reason = std::string(raw);
  response->finish_reason = FinishReasonOf(raw);
  if (response->finish_reason == FinishReason::kContentFilter) {
    response->refusal = "stop_reason refusal: the model declined to answer";
  }
}

// Reads a usage object; fields that are absent keep their value (message_delta carries only
// some of them, cumulatively).
void MergeUsage(const Json& usage, Usage* out) {
  int64_t uncached = IntMember(usage, "input_tokens");
  int64_t cache_write = IntMember(usage, "cache_creation_input_tokens");
  int64_t cache_read = IntMember(usage, "cache_read_input_tokens");
  if (Member(usage, "input_tokens")) {
    out->input_tokens = uncached + cache_write + cache_read;
    out->cached_input_tokens = cache_read;
    out->cache_write_tokens = cache_write;
  }
  if (Member(usage, "output_tokens")) out->output_tokens = IntMember(usage, "output_tokens");
}

void AppendBlock(const Json& block, ChatResponse* response) {
  std::string type = StringMember(block, "type");
  if (type == "text") response->text += StringMember(block, "text");
  if (type == "thinking") response->reasoning += StringMember(block, "thinking");
}

LlmErrorKind KindOfType(std::string_view type, std::string_view message, int status) {
  if (type == "authentication_error") return LlmErrorKind::kAuth;
  if (type == "permission_error") return LlmErrorKind::kPermissionDenied;
  if (type == "not_found_error") return LlmErrorKind::kModelNotFound;
  if (type == "request_too_large") return LlmErrorKind::kContextTooLong;
  if (type == "rate_limit_error") return LlmErrorKind::kRateLimited;
  if (type == "billing_error") return LlmErrorKind::kQuotaExhausted;
  if (type == "api_error") return LlmErrorKind::kServerError;
  if (type == "overloaded_error") return LlmErrorKind::kOverloaded;
  if (type == "timeout_error") return LlmErrorKind::kTimeout;
  if (type == "invalid_request_error") {
    if (LooksLikeContextTooLong(message)) return LlmErrorKind::kContextTooLong;
    if (message.find("credit balance") != std::string_view::npos) {
      return LlmErrorKind::kQuotaExhausted;
    }
    return LlmErrorKind::kBadRequest;
  }
  return KindFromHttpStatus(status);
}

CallError ErrorFromEnvelope(const Json& envelope, int status) {
  const Json* error = ObjectMember(envelope, "error");
  std::string type = error ? StringMember(*error, "type") : "";
  std::string message = error ? StringMember(*error, "message") : "";
  CallError out;
  out.http_status = status;
  out.kind = KindOfType(type, message, status);
  out.detail = DescribeHttpError(status, type, message);
  out.request_id = StringMember(envelope, "request_id");
  return out;
}

Reply ParseMessage(const Json& body, int status) {
  const Json* content = ArrayMember(body, "content");
  if (StringMember(body, "type") != "message" || !content) {
    return Reply::Fail(LlmErrorKind::kBadResponse,
                       "response is not a message (no \"type\":\"message\" with content)", status);
  }
  ChatResponse response;
  for (const Json& block : *content) AppendBlock(block, &response);
  SetFinish(StringMember(body, "stop_reason"), &response);
  if (const Json* usage = ObjectMember(body, "usage")) MergeUsage(*usage, &response.usage);
  response.request_id = StringMember(body, "id");
  response.model = StringMember(body, "model");
  return Reply::Ok(std::move(response));
}

// Applies message_start, content_block_start/delta and message_delta events; an "error" event
// ends the stream with that error.
class AnthropicStreamFold : public StreamFold {
 public:
  void Add(const SseEvent& event) override {
    if (failure_) return;
    std::string parse_error;
    std::optional<Json> data = ParseJson(event.data, &parse_error);
    if (!data) {
      failure_ = Reply::Fail(LlmErrorKind::kBadResponse, "stream event: " + parse_error);
      return;
    }
    Fold(*data);
  }

  const ChatResponse& partial() const override { return response_; }

  Reply Finish() override {
    if (failure_) return *failure_;
    if (!finished_) {
      return Reply::Fail(LlmErrorKind::kBadResponse, "stream ended without a stop_reason");
    }
    return Reply::Ok(response_);
  }

 private:
  void Fold(const Json& event) {
    std::string type = StringMember(event, "type");
    if (type == "error") {
      failure_ = Reply::Fail(ErrorFromEnvelope(event, 200));
    } else if (type == "message_start") {
      const Json* message = ObjectMember(event, "message");
      if (!message) return;
      response_.request_id = StringMember(*message, "id");
      response_.model = StringMember(*message, "model");
      if (const Json* usage = ObjectMember(*message, "usage")) MergeUsage(*usage, &response_.usage);
    } else if (type == "content_block_start") {
      if (const Json* block = ObjectMember(event, "content_block")) AppendBlock(*block, &response_);
    } else if (type == "content_block_delta") {
      const Json* delta = ObjectMember(event, "delta");
      if (delta) response_.text += StringMember(*delta, "text");
      if (delta) response_.reasoning += StringMember(*delta, "thinking");
    } else if (type == "message_delta") {
      const Json* delta = ObjectMember(event, "delta");
      std::string stop = delta ? StringMember(*delta, "stop_reason") : "";
      if (!stop.empty()) SetFinish(stop, &response_);
      finished_ = finished_ || !stop.empty();
      if (const Json* usage = ObjectMember(event, "usage")) MergeUsage(*usage, &response_.usage);
    }  // ping, content_block_stop, message_stop.
  }

  ChatResponse response_;
  std::optional<Reply> failure_;
  bool finished_ = false;
};

class AnthropicWire : public WireCodec {
 public:
  Result<HttpRequest> BuildRequest(const ChatRequest& request, const ProviderSettings& settings,
                                   const Secret& key) const override {
    KF_ASSIGN_OR_RETURN(Json body, BodyOf(request, settings));
    HttpRequest http;
    http.url = JoinUrl(settings.base_url, "messages");
    http.headers.push_back({"Content-Type", "application/json"});
    http.headers.push_back({"anthropic-version", "2023-06-01"});
    if (!key.empty()) http.headers.push_back({"x-api-key", key.Reveal()});
    http.body = body.dump();
    return http;
  }

  Reply ParseReply(const HttpResponse& http) const override {
    std::string parse_error;
    std::optional<Json> body = ParseJson(http.body, &parse_error);
    bool is_error_envelope = body && StringMember(*body, "type") == "error";
    if (http.status < 200 || http.status >= 300 || is_error_envelope) {
      if (is_error_envelope) return Reply::Fail(ErrorFromEnvelope(*body, http.status));
      return Reply::Fail(KindFromHttpStatus(http.status), DescribeRawBody(http.status, http.body),
                         http.status);
    }
    if (!body) {
      return Reply::Fail(LlmErrorKind::kBadResponse, "response body: " + parse_error, http.status);
    }
    return ParseMessage(*body, http.status);
  }

  std::unique_ptr<StreamFold> NewStreamFold() const override {
    return std::make_unique<AnthropicStreamFold>();
  }
};

}  // namespace

std::unique_ptr<WireCodec> NewAnthropicWire() { return std::make_unique<AnthropicWire>(); }

}  // namespace kforge::llm
