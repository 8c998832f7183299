// Google Gemini generateContent
// (POST {base_url}/models/{model}:generateContent, or :streamGenerateContent?alt=sse when
// streaming; base_url
// "https://generativelanguage.googleapis.com/v1beta").
//
// Request (camelCase proto JSON): {"systemInstruction":{"parts":[{"text"}]}, "contents":
// [{"role":"user"|"model","parts":[{"text"} | {"inlineData":{"mimeType","data"}}]}],
// "generationConfig":{"temperature","maxOutputTokens","seed","stopSequences","thinkingConfig":
// {"thinkingBudget"}}}. Auth: the "x-goog-api-key" header, so the key is never in a URL.
//
// Response: candidates[0].content.parts[] (parts with "thought": true are reasoning),
// candidates[0].finishReason, promptFeedback.blockReason, usageMetadata.{promptTokenCount
// (cached included), cachedContentTokenCount, candidatesTokenCount (thoughts excluded),
// thoughtsTokenCount}, modelVersion, responseId.
// Errors: {"error":{"code","message","status","details":[...]}}; a bad key is 400
// INVALID_ARGUMENT with ErrorInfo reason API_KEY_INVALID; a 429 may carry RetryInfo.retryDelay.
#include <array>
#include <nlohmann/json.hpp>

#include "llm/json_util.h"
#include "llm/sse.h"
#include "llm/wire.h"

namespace kforge::llm {

namespace {

std::optional<int> ThinkingBudget(ReasoningEffort effort) {
  switch (effort) {
    case ReasoningEffort::kNone:
      return 0;
    case ReasoningEffort::kMinimal:
      return 512;
    case ReasoningEffort::kLow:
      return 1024;
    case ReasoningEffort::kMedium:
      return 8192;
    case ReasoningEffort::kHigh:
      return 24576;
    default:
      return std::nullopt;
  }
}

Json PartOf(const ContentPart& part) {
  if (!part.is_image()) return {{"text", part.text}};
  return {{"inlineData", {{"mimeType", part.mime_type}, {"data", Base64Encode(part.data)}}}};
}

Json GenerationConfigOf(const ChatOptions& options) {
  Json config = Json::object();
  if (options.temperature) config["temperature"] = *options.temperature;
  if (options.max_output_tokens) config["maxOutputTokens"] = *options.max_output_tokens;
  if (options.seed) config["seed"] = *options.seed;
  if (!options.stop.empty()) config["stopSequences"] = options.stop;
  if (std::optional<int> budget = ThinkingBudget(options.reasoning_effort)) {
    config["thinkingConfig"] = {{"thinkingBudget", *budget}};
  }
  return config;
}

Json BodyOf(const ChatRequest& request) {
  Json body = Json::object();
  if (!request.system.empty()) {
    body["systemInstruction"] = {{"parts", Json::array({{{"text", request.system}}})}};
  }
  Json contents = Json::array();
  for (const Message& message : request.messages) {
    Json parts = Json::array();
    for (const ContentPart& part : message.parts) parts.push_back(PartOf(part));
    const char* role = message.role == Role::kUser ? "user" : "model";
    contents.push_back({{"role", role}, {"parts", std::move(parts)}});
  }
  body["contents"] = std::move(contents);
  Json config = GenerationConfigOf(request.options);
  if (!config.empty()) body["generationConfig"] = std::move(config);
  return body;
}

// Streamed: ":streamGenerateContent?alt=sse" answers with server-sent events.
std::string ModelPath(std::string_view model, bool stream) {
  if (model.substr(0, 7) == "models/") model.remove_prefix(7);
  return "models/" + std::string(model) +
         (stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
}

bool IsSafetyFinish(std::string_view reason) {
  static constexpr std::array<std::string_view, 7> kBlocked = {
      "SAFETY", "RECITATION",   "BLOCKLIST", "PROHIBITED_CONTENT",
      "SPII",   "IMAGE_SAFETY", "LANGUAGE"};
  for (std::string_view blocked : kBlocked) {
    if (reason == blocked) return true;
  }
  return false;
}

FinishReason FinishReasonOf(std::string_view reason) {
  if (reason.empty() || reason == "FINISH_REASON_UNSPECIFIED") return FinishReason::kUnknown;
  if (reason == "STOP") return FinishReason::kStop;
  if (reason == "MAX_TOKENS") return FinishReason::kLength;
  if (IsSafetyFinish(reason)) return FinishReason::kContentFilter;
  return FinishReason::kOther;  // OTHER, MALFORMED_FUNCTION_CALL, ...
}

// The categories rated "blocked": true, for the refusal text.
std::string BlockedCategories(const Json& candidate) {
  std::string out;
  if (const Json* ratings = ArrayMember(candidate, "safetyRatings")) {
    for (const Json& rating : *ratings) {
      const Json* blocked = Member(rating, "blocked");
      if (!blocked || !blocked->is_boolean() || !blocked->get<bool>()) continue;
      out += (out.empty() ? "" : ", ") + StringMember(rating, "category");
    }
  }
  return out;
}

void SetFinish(const Json& candidate, ChatResponse* response) {
  std::string raw = StringMember(candidate, "finishReason");
  if (raw.empty()) return;
  response->raw_finish_reason = raw;
  response->finish_reason = FinishReasonOf(raw);
  if (response->finish_reason != FinishReason::kContentFilter) return;
  std::string categories = BlockedCategories(candidate);
  response->refusal = "finishReason " + raw + (categories.empty() ? "" : " (" + categories + ")");
}

void AppendParts(const Json& candidate, ChatResponse* response) {
  const Json* content = ObjectMember(candidate, "content");
  const Json* parts = content ? ArrayMember(*content, "parts") : nullptr;
  if (!parts) return;  // A SAFETY stop may come with "content": {}.
  for (const Json& part : *parts) {
    const Json* thought = Member(part, "thought");
    bool is_thought = thought && thought->is_boolean() && thought->get<bool>();
    (is_thought ? response->reasoning : response->text) += StringMember(part, "text");
  }
}

Usage UsageOf(const Json& metadata) {
  Usage usage;
  usage.input_tokens = IntMember(metadata, "promptTokenCount");
  usage.cached_input_tokens = IntMember(metadata, "cachedContentTokenCount");
  usage.reasoning_tokens = IntMember(metadata, "thoughtsTokenCount");
  usage.output_tokens = IntMember(metadata, "candidatesTokenCount") + usage.reasoning_tokens;
  return usage;
}

// promptFeedback.blockReason, or a candidate-less answer that only carries feedback.
std::optional<std::string> PromptBlock(const Json& body) {
  const Json* feedback = ObjectMember(body, "promptFeedback");
  if (!feedback) return std::nullopt;
  std::string reason = StringMember(*feedback, "blockReason");
  std::string message = StringMember(*feedback, "blockReasonMessage");
  const Json* candidates = ArrayMember(body, "candidates");
  bool no_candidates = !candidates || candidates->empty();
  if (reason.empty() && !(no_candidates && !message.empty())) return std::nullopt;
  std::string text = "the prompt was blocked";
  if (!reason.empty()) text += " (blockReason " + reason + ")";
  if (!message.empty()) text += ": " + message;
  return text;
}

// Folds one GenerateContentResponse (a whole answer or one stream chunk) into `response`.
void FoldResponse(const Json& body, ChatResponse* response) {
  if (const Json* metadata = ObjectMember(body, "usageMetadata")) {
    response->usage = UsageOf(*metadata);
  }
  if (std::string model = StringMember(body, "modelVersion"); !model.empty()) {
    response->model = model;
  }
  if (std::string id = StringMember(body, "responseId"); !id.empty()) response->request_id = id;
  if (std::optional<std::string> block = PromptBlock(body)) {
    response->finish_reason = FinishReason::kContentFilter;
    response->raw_finish_reason = "PROMPT_BLOCKED";
    response->refusal = *block;
  }
  const Json* candidates = ArrayMember(body, "candidates");
  if (!candidates || candidates->empty()) return;
  AppendParts((*candidates)[0], response);
  SetFinish((*candidates)[0], response);
}

bool HasCandidates(const Json& body) {
  const Json* candidates = ArrayMember(body, "candidates");
  return candidates && !candidates->empty();
}

std::string ReasonOf(const Json& error) {
  if (const Json* details = ArrayMember(error, "details")) {
    for (const Json& detail : *details) {
      std::string reason = StringMember(detail, "reason");
      if (!reason.empty()) return reason;
    }
  }
  return "";
}

std::optional<std::chrono::milliseconds> RetryDelayOf(const Json& error) {
  if (const Json* details = ArrayMember(error, "details")) {
    for (const Json& detail : *details) {
      std::string delay = StringMember(detail, "retryDelay");
      if (!delay.empty()) return ParseDuration(delay);
    }
  }
  return std::nullopt;
}

LlmErrorKind KindOfStatus(std::string_view status, std::string_view reason,
                          std::string_view message, int http_status) {
  if (reason == "API_KEY_INVALID" || message.find("API key not valid") != std::string::npos) {
    return LlmErrorKind::kAuth;
  }
  if (status == "UNAUTHENTICATED") return LlmErrorKind::kAuth;
  if (status == "PERMISSION_DENIED") return LlmErrorKind::kPermissionDenied;
  if (status == "NOT_FOUND") return LlmErrorKind::kModelNotFound;
  if (status == "RESOURCE_EXHAUSTED") return LlmErrorKind::kRateLimited;
  if (status == "INTERNAL") return LlmErrorKind::kServerError;
  if (status == "UNAVAILABLE") return LlmErrorKind::kOverloaded;
  if (status == "DEADLINE_EXCEEDED") return LlmErrorKind::kTimeout;
  if (LooksLikeContextTooLong(message)) return LlmErrorKind::kContextTooLong;
  if (status == "INVALID_ARGUMENT" || status == "FAILED_PRECONDITION") {
    return LlmErrorKind::kBadRequest;
  }
  return KindFromHttpStatus(http_status);
}

Reply ParseFailure(const HttpResponse& http) {
  std::string parse_error;
  std::optional<Json> body = ParseJson(http.body, &parse_error);
  const Json* error = body ? ObjectMember(*body, "error") : nullptr;
  if (!error) {
    return Reply::Fail(KindFromHttpStatus(http.status), DescribeRawBody(http.status, http.body),
                       http.status);
  }
  std::string status = StringMember(*error, "status");
  std::string reason = ReasonOf(*error);
  std::string message = StringMember(*error, "message");
  CallError out;
  out.http_status = http.status;
  out.kind = KindOfStatus(status, reason, message, http.status);
  out.detail =
      DescribeHttpError(http.status, reason.empty() ? status : status + " " + reason, message);
  out.retry_after = RetryDelayOf(*error);
  return Reply::Fail(std::move(out));
}

// Each event is one GenerateContentResponse chunk; the last one carries the finishReason.
class GeminiStreamFold : public StreamFold {
 public:
  void Add(const SseEvent& event) override {
    if (failure_) return;
    std::string parse_error;
    std::optional<Json> chunk = ParseJson(event.data, &parse_error);
    if (!chunk) {
      failure_ = Reply::Fail(LlmErrorKind::kBadResponse, "stream chunk: " + parse_error);
    } else if (const Json* error = ObjectMember(*chunk, "error")) {
      int code = static_cast<int>(IntMember(*error, "code"));
      failure_ = ParseFailure(HttpResponse{code >= 400 ? code : 500, {}, event.data});
    } else {
      FoldResponse(*chunk, &response_);
      any_ = true;
    }
  }

  const ChatResponse& partial() const override { return response_; }

  Reply Finish() override {
    if (failure_) return *failure_;
    if (!any_ || response_.finish_reason == FinishReason::kUnknown) {
      return Reply::Fail(LlmErrorKind::kBadResponse, "stream ended without a finishReason");
    }
    return Reply::Ok(response_);
  }

 private:
  ChatResponse response_;
  std::optional<Reply> failure_;
  bool any_ = false;
};

class GeminiWire : public WireCodec {
 public:
  Result<HttpRequest> BuildRequest(const ChatRequest& request, const ProviderSettings& settings,
                                   const Secret& key) const override {
    HttpRequest http;
    http.url = JoinUrl(settings.base_url, ModelPath(request.options.model, settings.stream));
    http.headers.push_back({"Content-Type", "application/json"});
    if (!key.empty()) http.headers.push_back({"x-goog-api-key", key.Reveal()});
    http.body = BodyOf(request).dump();
    return http;
  }

  Reply ParseReply(const HttpResponse& http) const override {
    if (http.status < 200 || http.status >= 300) return ParseFailure(http);
    std::string parse_error;
    std::optional<Json> body = ParseJson(http.body, &parse_error);
    if (!body || !body->is_object()) {
      return Reply::Fail(
          LlmErrorKind::kBadResponse,
          "response body is not a JSON object" + (body ? std::string() : " (" + parse_error + ")"),
          http.status);
    }
    if (!HasCandidates(*body) && !ObjectMember(*body, "promptFeedback")) {
      return Reply::Fail(LlmErrorKind::kBadResponse, "response has no candidates", http.status);
    }
    ChatResponse response;
    FoldResponse(*body, &response);
    return Reply::Ok(std::move(response));
  }

  std::unique_ptr<StreamFold> NewStreamFold() const override {
    return std::make_unique<GeminiStreamFold>();
  }
};

}  // namespace

std::unique_ptr<WireCodec> NewGeminiWire() { return std::make_unique<GeminiWire>(); }

}  // namespace kforge::llm
