// OpenAI Chat Completions (POST {base_url}/chat/completions), also spoken by vLLM, SGLang,
// Ollama, llama.cpp's server, OpenRouter, DeepSeek and Together.
//
// Request: {"model", "messages": [{"role", "content"}], "temperature", "max_completion_tokens"
// or "max_tokens", "seed", "stop", "reasoning_effort", "stream" with
// "stream_options":{"include_usage":true}}. A message whose only part is text is sent
// with a string "content" (every compatible server accepts it); otherwise "content" is an array of
// {"type":"text","text"} and {"type":"image_url","image_url":{"url":"data:<mime>;base64,..."}}.
// Auth: "Authorization: Bearer <key>", omitted when there is no key.
//
// Response: choices[0].message.{content, refusal, reasoning | reasoning_content (vLLM, Ollama,
// DeepSeek)}, choices[0].finish_reason, usage.{prompt_tokens, completion_tokens,
// prompt_tokens_details.cached_tokens, completion_tokens_details.reasoning_tokens}, id, model.
// Errors: {"error":{"message","type","param","code"}} (OpenAI, Ollama, vLLM >= 0.10.1, where
// code is the integer HTTP status), {"object":"error","message",...} (vLLM < 0.10.1), or
// {"error":"<text>"} (Ollama's native API).
#include <nlohmann/json.hpp>

#include "llm/json_util.h"
#include "llm/sse.h"
#include "llm/wire.h"

namespace kforge::llm {

namespace {

Json ContentOf(const Message& message) {
  if (message.parts.size() == 1 && !message.parts[0].is_image()) return message.parts[0].text;
  Json parts = Json::array();
  for (const ContentPart& part : message.parts) {
    if (part.is_image()) {
      std::string url = "data:" + part.mime_type + ";base64," + Base64Encode(part.data);
      parts.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
    } else {
      parts.push_back({{"type", "text"}, {"text", part.text}});
    }
  }
  return parts;
}

Json MessagesOf(const ChatRequest& request, const ProviderSettings& settings) {
  Json messages = Json::array();
  if (!request.system.empty()) {
    messages.push_back({{"role", settings.system_role}, {"content", request.system}});
  }
  for (const Message& message : request.messages) {
    const char* role = message.role == Role::kUser ? "user" : "assistant";
    messages.push_back({{"role", role}, {"content", ContentOf(message)}});
  }
  return messages;
}

Json BodyOf(const ChatRequest& request, const ProviderSettings& settings) {
  const ChatOptions& options = request.options;
  Json body = {{"model", options.model}, {"messages", MessagesOf(request, settings)}};
  if (options.temperature) body["temperature"] = *options.temperature;
  if (options.max_output_tokens) body[settings.max_tokens_field] = *options.max_output_tokens;
  if (options.seed) body["seed"] = *options.seed;
  if (!options.stop.empty()) body["stop"] = options.stop;
  if (options.reasoning_effort != ReasoningEffort::kUnset) {
    body["reasoning_effort"] = ReasoningEffortName(options.reasoning_effort);
  }
  if (settings.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

FinishReason FinishReasonOf(std::string_view reason) {
  if (reason.empty()) return FinishReason::kUnknown;
  if (reason == "stop") return FinishReason::kStop;
  if (reason == "length") return FinishReason::kLength;
  if (reason == "content_filter") return FinishReason::kContentFilter;
  if (reason == "tool_calls" || reason == "function_call") return FinishReason::kToolCalls;
  return FinishReason::kOther;
}

// "content" is a string, null, or (some servers) an array of text parts.
std::string TextOf(const Json& message) {
  const Json* content = Member(message, "content");
  if (!content) return "";
  if (content->is_string()) return content->get<std::string>();
  std::string text;
  if (content->is_array()) {
    for (const Json& part : *content) text += StringMember(part, "text");
  }
  return text;
}

std::string ReasoningOf(const Json& message) {
  std::string reasoning = StringMember(message, "reasoning");
  return reasoning.empty() ? StringMember(message, "reasoning_content") : reasoning;
}

Usage UsageOf(const Json& usage) {
  Usage out;
  out.input_tokens = IntMember(usage, "prompt_tokens");
  out.output_tokens = IntMember(usage, "completion_tokens");
  if (const Json* details = ObjectMember(usage, "prompt_tokens_details")) {
    out.cached_input_tokens = IntMember(*details, "cached_tokens");
  }
  if (const Json* details = ObjectMember(usage, "completion_tokens_details")) {
    out.reasoning_tokens = IntMember(*details, "reasoning_tokens");
  }
  return out;
}

// llama.cpp's server adds "timings" (prompt_ms, predicted_ms): its own compute time.
void SetServerTime(const Json& timings, ChatResponse* response) {
  const Json* prompt = Member(timings, "prompt_ms");
  const Json* predicted = Member(timings, "predicted_ms");
  if (!prompt || !predicted || !prompt->is_number() || !predicted->is_number()) return;
  double ms = prompt->get<double>() + predicted->get<double>();
  response->server_time = std::chrono::milliseconds(static_cast<int64_t>(ms + 0.5));
}

void SetFinish(std::string_view raw, std::string_view refusal, ChatResponse* response) {
  response->raw_finish_reason = std::string(raw);
  response->finish_reason = FinishReasonOf(raw);
  if (!refusal.empty()) {
    response->finish_reason = FinishReason::kContentFilter;
    response->refusal = std::string(refusal);
  } else if (response->finish_reason == FinishReason::kContentFilter) {
    response->refusal =
        "finish_reason content_filter: the provider's content filter stopped "
        "the answer";
  }
}

// The error object of any of the three documented error shapes, or nullptr.
const Json* ErrorObjectOf(const Json& body) {
  if (const Json* error = Member(body, "error")) return error;
  if (StringMember(body, "object") == "error") return &body;
  return nullptr;
}

LlmErrorKind RefineKind(LlmErrorKind kind, std::string_view code, std::string_view type,
                        std::string_view message) {
  if (code == "invalid_api_key") return LlmErrorKind::kAuth;
  if (code == "model_not_found") return LlmErrorKind::kModelNotFound;
  if (code == "insufficient_quota" || type == "insufficient_quota") {
    return LlmErrorKind::kQuotaExhausted;
  }
  // llama.cpp's server: type exceed_context_size_error, with n_prompt_tokens and n_ctx.
  if (code == "context_length_exceeded" || type == "exceed_context_size_error" ||
      LooksLikeContextTooLong(message)) {
    return LlmErrorKind::kContextTooLong;
  }
  return kind;
}

CallError ErrorFromObject(const Json& error, int status) {
  CallError out;
  out.http_status = status;
  std::string message, code, type;
  if (error.is_string()) {
    message = error.get<std::string>();
  } else {
    message = StringMember(error, "message");
    code = StringOrIntMember(error, "code");
    type = StringMember(error, "type");
  }
  out.kind = RefineKind(KindFromHttpStatus(status), code, type, message);
  std::string label = code.empty() || code == std::to_string(status) ? type : code;
  out.detail = DescribeHttpError(status, label, message);
  return out;
}

Reply ParseFailure(const HttpResponse& http) {
  std::string parse_error;
  std::optional<Json> body = ParseJson(http.body, &parse_error);
  const Json* error = body ? ErrorObjectOf(*body) : nullptr;
  if (!error) {
    return Reply::Fail(KindFromHttpStatus(http.status), DescribeRawBody(http.status, http.body),
                       http.status);
  }
  return Reply::Fail(ErrorFromObject(*error, http.status));
}

Reply ParseCompletion(const Json& body, int status) {
  if (const Json* error = ErrorObjectOf(body)) {
    // Some gateways report errors inside a 200; an integer code there is the real status.
    int code = static_cast<int>(IntMember(*error, "code"));
    return Reply::Fail(ErrorFromObject(*error, code >= 400 ? code : 500));
  }
  const Json* choices = ArrayMember(body, "choices");
  if (!choices || choices->empty() || !(*choices)[0].is_object()) {
    return Reply::Fail(LlmErrorKind::kBadResponse, "response has no choices", status);
  }
  const Json& choice = (*choices)[0];
  const Json* message = ObjectMember(choice, "message");
  if (!message) return Reply::Fail(LlmErrorKind::kBadResponse, "choice has no message", status);
  ChatResponse response;
  response.text = TextOf(*message);
  response.reasoning = ReasoningOf(*message);
  SetFinish(StringMember(choice, "finish_reason"), StringMember(*message, "refusal"), &response);
  if (const Json* usage = ObjectMember(body, "usage")) response.usage = UsageOf(*usage);
  if (const Json* timings = ObjectMember(body, "timings")) SetServerTime(*timings, &response);
  response.request_id = StringMember(body, "id");
  response.model = StringMember(body, "model");
  return Reply::Ok(std::move(response));
}

// Accumulates chat.completion.chunk objects; a stream ends with a finish_reason (then a usage
// chunk, with include_usage) and "data: [DONE]".
class OpenAiStreamFold : public StreamFold {
 public:
  void Add(const SseEvent& event) override {
    if (failure_ || done_) return;
    if (event.data == "[DONE]") {
      done_ = true;
      return;
    }
    std::string parse_error;
    std::optional<Json> chunk = ParseJson(event.data, &parse_error);
    if (!chunk) {
      failure_ = Reply::Fail(LlmErrorKind::kBadResponse, "stream chunk: " + parse_error);
    } else if (const Json* error = ErrorObjectOf(*chunk)) {
      failure_ = Reply::Fail(ErrorFromObject(*error, 500));
    } else {
      FoldChunk(*chunk);
    }
  }

  const ChatResponse& partial() const override { return response_; }

  Reply Finish() override {
    if (failure_) return *failure_;
    if (!finished_ && !done_) {
      return Reply::Fail(LlmErrorKind::kBadResponse,
                         "stream ended without a finish_reason or [DONE]");
    }
    return Reply::Ok(response_);
  }

 private:
  void FoldChunk(const Json& chunk) {
    if (response_.request_id.empty()) response_.request_id = StringMember(chunk, "id");
    if (response_.model.empty()) response_.model = StringMember(chunk, "model");
    if (const Json* usage = ObjectMember(chunk, "usage")) response_.usage = UsageOf(*usage);
    if (const Json* timings = ObjectMember(chunk, "timings")) SetServerTime(*timings, &response_);
    const Json* choices = ArrayMember(chunk, "choices");
    if (!choices || choices->empty()) return;
    const Json& choice = (*choices)[0];
    if (const Json* delta = ObjectMember(choice, "delta")) {
      response_.text += StringMember(*delta, "content");
      response_.reasoning += ReasoningOf(*delta);
      refusal_ += StringMember(*delta, "refusal");
    }
    std::string finish = StringMember(choice, "finish_reason");
    if (!finish.empty()) {
      SetFinish(finish, refusal_, &response_);
      finished_ = true;
    }
  }

  ChatResponse response_;
  std::string refusal_;
  std::optional<Reply> failure_;
  bool finished_ = false;
  bool done_ = false;
};

class OpenAiWire : public WireCodec {
 public:
  Result<HttpRequest> BuildRequest(const ChatRequest& request, const ProviderSettings& settings,
                                   const Secret& key) const override {
    HttpRequest http;
    http.url = JoinUrl(settings.base_url, "chat/completions");
    http.headers.push_back({"Content-Type", "application/json"});
    if (!key.empty()) http.headers.push_back({"Authorization", "Bearer " + key.Reveal()});
    http.body = BodyOf(request, settings).dump();
    return http;
  }

  Reply ParseReply(const HttpResponse& http) const override {
    if (http.status < 200 || http.status >= 300) return ParseFailure(http);
    std::string parse_error;
    std::optional<Json> body = ParseJson(http.body, &parse_error);
    if (!body || !body->is_object()) {
      return Reply::Fail(LlmErrorKind::kBadResponse,
                         "response body is not a JSON object (" +
                             (body ? std::string("wrong type") : parse_error) + ")",
                         http.status);
    }
    return ParseCompletion(*body, http.status);
  }

  std::unique_ptr<StreamFold> NewStreamFold() const override {
    return std::make_unique<OpenAiStreamFold>();
  }
};

}  // namespace

std::unique_ptr<WireCodec> NewOpenAiWire() { return std::make_unique<OpenAiWire>(); }

}  // namespace kforge::llm
