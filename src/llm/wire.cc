// Helpers shared by the wire formats (wire.h).
#include "llm/wire.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cctype>

namespace kforge::llm {

Reply Reply::Ok(ChatResponse response) {
  Reply reply;
  reply.response = std::move(response);
  return reply;
}

Reply Reply::Fail(LlmErrorKind kind, std::string detail, int http_status) {
  CallError error;
  error.kind = kind;
  error.detail = std::move(detail);
  error.http_status = http_status;
  return Fail(std::move(error));
}

Reply Reply::Fail(CallError error) {
  Reply reply;
  reply.error = std::move(error);
  return reply;
}

std::unique_ptr<WireCodec> NewWire(WireFormat wire) {
  switch (wire) {
    case WireFormat::kOpenAi:
      return NewOpenAiWire();
    case WireFormat::kAnthropic:
      return NewAnthropicWire();
    case WireFormat::kGemini:
      return NewGeminiWire();
    case WireFormat::kReplay:
      break;
  }
  assert(false && "replay has no wire format");
  return nullptr;
}

LlmErrorKind KindFromHttpStatus(int status) {
  switch (status) {
    case 401:
      return LlmErrorKind::kAuth;
    case 402:
      return LlmErrorKind::kQuotaExhausted;  // "Payment required" (OpenRouter credit).
    case 403:
      return LlmErrorKind::kPermissionDenied;
    case 404:
      return LlmErrorKind::kModelNotFound;
    case 408:
      return LlmErrorKind::kTimeout;
    case 413:
      return LlmErrorKind::kContextTooLong;
    case 429:
      return LlmErrorKind::kRateLimited;
    case 501:
    case 505:
      return LlmErrorKind::kBadRequest;  // The server cannot do this at all.
    case 503:
    case 529:
      return LlmErrorKind::kOverloaded;
    case 504:
      return LlmErrorKind::kTimeout;
  }
  if (status >= 500) return LlmErrorKind::kServerError;
  if (status >= 400) return LlmErrorKind::kBadRequest;
  return LlmErrorKind::kBadResponse;  // 1xx/3xx: not an answer we can use.
}

namespace {
std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string Clip(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  return std::string(text.substr(0, limit)) + "...";
}
}  // namespace

bool LooksLikeContextTooLong(std::string_view message) {
  static constexpr std::array<std::string_view, 8> kPhrases = {
      "context_length_exceeded",
      "maximum context length",
      "context length",
      "prompt is too long",
      "context window",
      "exceeds the maximum number of tokens",
      "exceeds the available context size",
      "too many tokens",
  };
  std::string lower = Lower(message);
  for (std::string_view phrase : kPhrases) {
    if (lower.find(phrase) != std::string::npos) return true;
  }
  return false;
}

std::string DescribeHttpError(int status, std::string_view code, std::string_view message) {
  std::string text = "HTTP " + std::to_string(status);
  if (!code.empty()) text += " " + std::string(code);
  if (!message.empty()) text += ": " + Clip(message, 500);
  return text;
}

std::string DescribeRawBody(int status, std::string_view body) {
  std::string flat;
  for (char c : body.substr(0, 200)) {
    flat.push_back(std::isspace(static_cast<unsigned char>(c)) ? ' ' : c);
  }
  if (body.size() > 200) flat += "...";
  if (flat.empty()) flat = "(empty body)";
  return "HTTP " + std::to_string(status) + ": " + flat;
}

std::string Base64Encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t n = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kAlphabet[(n >> shift) & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = uint8_t(bytes[i]) << 16;
    if (rest == 2) n |= uint8_t(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string JoinUrl(std::string_view base_url, std::string_view path) {
  while (!base_url.empty() && base_url.back() == '/') base_url.remove_suffix(1);
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return std::string(base_url) + "/" + std::string(path);
}

Reply WireCodec::ParseStream(std::string_view sse_body) const {
  std::unique_ptr<StreamFold> fold = NewStreamFold();
  for (const SseEvent& event : ParseSse(sse_body)) fold->Add(event);
  return fold->Finish();
}

}  // namespace kforge::llm
