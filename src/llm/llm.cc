// The value types of llm.h and the error-kind tags.
#include "kforge/llm/llm.h"

#include <array>
#include <fstream>
#include <sstream>

#include "kforge/llm/secrets.h"

namespace kforge::llm {

ContentPart ContentPart::Text(std::string text) {
  ContentPart part;
  part.kind = Kind::kText;
  part.text = std::move(text);
  return part;
}

ContentPart ContentPart::Image(std::string mime_type, std::string bytes) {
  ContentPart part;
  part.kind = Kind::kImage;
  part.mime_type = std::move(mime_type);
  part.data = std::move(bytes);
  return part;
}

namespace {
bool StartsWithBytes(std::string_view data, std::string_view prefix) {
  return data.size() >= prefix.size() && data.substr(0, prefix.size()) == prefix;
}
}  // namespace

Result<ContentPart> MakeImagePart(std::string bytes) {
  // Signatures: PNG "\x89PNG\r\n\x1a\n" (PNG spec 5.2); JPEG SOI marker FF D8 FF.
  static constexpr std::string_view kPng("\x89PNG\r\n\x1a\n", 8);
  static constexpr std::string_view kJpeg("\xFF\xD8\xFF", 3);
  if (StartsWithBytes(bytes, kPng)) return ContentPart::Image("image/png", std::move(bytes));
  if (StartsWithBytes(bytes, kJpeg)) return ContentPart::Image("image/jpeg", std::move(bytes));
  return Status::InvalidArgument(
      "image is neither PNG nor JPEG (checked the file signature); convert it to PNG");
}

Result<ContentPart> LoadImagePart(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open image " + path.string());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return Status::IoError("cannot read image " + path.string());
  Result<ContentPart> part = MakeImagePart(std::move(bytes).str());
  if (!part.ok()) return part.status().WithContext(path.string());
  return part;
}

Message Message::User(std::string text) {
  return Message{Role::kUser, {ContentPart::Text(std::move(text))}};
}

Message Message::Assistant(std::string text) {
  return Message{Role::kAssistant, {ContentPart::Text(std::move(text))}};
}

bool Message::HasImages() const {
  for (const ContentPart& part : parts) {
    if (part.is_image()) return true;
  }
  return false;
}

bool ChatRequest::HasImages() const {
  for (const Message& message : messages) {
    if (message.HasImages()) return true;
  }
  return false;
}

namespace {
constexpr std::array<std::pair<ReasoningEffort, std::string_view>, 6> kEfforts = {{
    {ReasoningEffort::kUnset, "unset"},
    {ReasoningEffort::kNone, "none"},
    {ReasoningEffort::kMinimal, "minimal"},
    {ReasoningEffort::kLow, "low"},
    {ReasoningEffort::kMedium, "medium"},
    {ReasoningEffort::kHigh, "high"},
}};

constexpr std::array<std::pair<FinishReason, std::string_view>, 8> kFinishReasons = {{
    {FinishReason::kUnknown, "unknown"},
    {FinishReason::kStop, "stop"},
    {FinishReason::kLength, "length"},
    {FinishReason::kStopSequence, "stop_sequence"},
    {FinishReason::kToolCalls, "tool_calls"},
    {FinishReason::kContentFilter, "content_filter"},
    {FinishReason::kRepetition, "repetition"},
    {FinishReason::kOther, "other"},
}};

struct KindInfo {
  LlmErrorKind kind;
  std::string_view tag;
  StatusCode code;
  bool retryable;
};

constexpr std::array<KindInfo, 21> kKinds = {{
    {LlmErrorKind::kNone, "", StatusCode::kOk, false},
    {LlmErrorKind::kAuth, "auth", StatusCode::kInvalidArgument, false},
    {LlmErrorKind::kPermissionDenied, "permission_denied", StatusCode::kInvalidArgument, false},
    {LlmErrorKind::kModelNotFound, "model_not_found", StatusCode::kNotFound, false},
    {LlmErrorKind::kContextTooLong, "context_too_long", StatusCode::kInvalidArgument, false},
    {LlmErrorKind::kContentFiltered, "content_filtered", StatusCode::kInvalidArgument, false},
    {LlmErrorKind::kRateLimited, "rate_limited", StatusCode::kUnavailable, true},
    {LlmErrorKind::kQuotaExhausted, "quota_exhausted", StatusCode::kUnavailable, false},
    {LlmErrorKind::kOverloaded, "overloaded", StatusCode::kUnavailable, true},
    {LlmErrorKind::kServerError, "server_error", StatusCode::kUnavailable, true},
    {LlmErrorKind::kTimeout, "timeout", StatusCode::kUnavailable, true},
    {LlmErrorKind::kConnectionFailed, "connection_failed", StatusCode::kUnavailable, false},
    {LlmErrorKind::kConnectionLost, "connection_lost", StatusCode::kUnavailable, true},
    {LlmErrorKind::kBadRequest, "bad_request", StatusCode::kInvalidArgument, false},
    {LlmErrorKind::kBadResponse, "bad_response", StatusCode::kUnavailable, false},
    {LlmErrorKind::kVisionUnsupported, "vision_unsupported", StatusCode::kInvalidArgument, false},
    {LlmErrorKind::kReplayDivergence, "replay_divergence", StatusCode::kInvalidArgument, false},
    {LlmErrorKind::kReplayExhausted, "replay_exhausted", StatusCode::kNotFound, false},
    {LlmErrorKind::kBudgetExceeded, "budget_exceeded", StatusCode::kUnavailable, false},
    {LlmErrorKind::kConfig, "config", StatusCode::kInvalidArgument, false},
    {LlmErrorKind::kCommandFailed, "command_failed", StatusCode::kUnavailable, false},
}};

const KindInfo& InfoOf(LlmErrorKind kind) {
  for (const KindInfo& info : kKinds) {
    if (info.kind == kind) return info;
  }
  return kKinds[0];
}

Status StatusWithCode(StatusCode code, std::string message) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return Status::InvalidArgument(std::move(message));
    case StatusCode::kNotFound:
      return Status::NotFound(std::move(message));
    case StatusCode::kUnavailable:
      return Status::Unavailable(std::move(message));
    case StatusCode::kIoError:
      return Status::IoError(std::move(message));
    default:
      return Status::Internal(std::move(message));
  }
}
}  // namespace

Result<ReasoningEffort> ParseReasoningEffort(std::string_view word) {
  for (const auto& [effort, name] : kEfforts) {
    if (name == word) return effort;
  }
  return Status::InvalidArgument("unknown reasoning effort '" + std::string(word) +
                                 "': use none, minimal, low, medium or high");
}

std::string_view ReasoningEffortName(ReasoningEffort effort) {
  for (const auto& [value, name] : kEfforts) {
    if (value == effort) return name;
  }
  return "unset";
}

std::string_view FinishReasonName(FinishReason reason) {
  for (const auto& [value, name] : kFinishReasons) {
    if (value == reason) return name;
  }
  return "unknown";
}

FinishReason FinishReasonFromName(std::string_view name) {
  for (const auto& [value, text] : kFinishReasons) {
    if (text == name) return value;
  }
  return FinishReason::kUnknown;
}

Usage& Usage::operator+=(const Usage& other) {
  input_tokens += other.input_tokens;
  cached_input_tokens += other.cached_input_tokens;
  cache_write_tokens += other.cache_write_tokens;
  output_tokens += other.output_tokens;
  reasoning_tokens += other.reasoning_tokens;
  return *this;
}

std::string_view LlmErrorKindTag(LlmErrorKind kind) { return InfoOf(kind).tag; }

bool IsRetryableKind(LlmErrorKind kind) { return InfoOf(kind).retryable; }

LlmErrorKind LlmErrorKindOf(const Status& status) {
  if (status.ok()) return LlmErrorKind::kNone;
  const std::string& message = status.message();
  for (size_t open = message.find('['); open != std::string::npos;
       open = message.find('[', open + 1)) {
    size_t close = message.find(']', open);
    if (close == std::string::npos) break;
    std::string_view tag(message.data() + open + 1, close - open - 1);
    for (const KindInfo& info : kKinds) {
      if (!info.tag.empty() && info.tag == tag) return info.kind;
    }
  }
  return LlmErrorKind::kNone;
}

Status MakeLlmError(LlmErrorKind kind, std::string_view who, std::string_view detail) {
  const KindInfo& info = InfoOf(kind);
  std::string message =
      std::string(who) + ": [" + std::string(info.tag) + "] " + std::string(detail);
  StatusCode code = info.code == StatusCode::kOk ? StatusCode::kInternal : info.code;
  return StatusWithCode(code, Redact(message));
}

}  // namespace kforge::llm

namespace kforge::llm {

double StreamProgress::TokensPerSecond() const {
  const double seconds = std::chrono::duration<double>(elapsed - first_token).count();
  if (tokens < 2 || seconds <= 0) return 0;
  return static_cast<double>(tokens - 1) / seconds;
}

}  // namespace kforge::llm
