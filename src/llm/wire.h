// WireCodec: one provider API's request and response format, as pure functions.
//
// A wire format turns a ChatRequest into an HttpRequest and an HttpResponse (any status) into
// a Reply: a ChatResponse or a classified CallError. It does no I/O, so every documented
// payload can be checked against it directly (wire_fixtures_test.cc). HttpLlmClient (client.h)
// adds transport, retries, limits and accounting around it.
//
// Thread-safety: implementations are immutable; safe from many threads.
#ifndef KFORGE_LLM_WIRE_H_
#define KFORGE_LLM_WIRE_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/llm/config.h"
#include "kforge/llm/llm.h"
#include "kforge/llm/secrets.h"
#include "kforge/llm/transport.h"
#include "llm/retry.h"
#include "llm/sse.h"

namespace kforge::llm {

// A ChatResponse, or the CallError of one attempt.
struct Reply {
  std::optional<ChatResponse> response;
  CallError error;  // Meaningful only when !ok().

  bool ok() const { return response.has_value(); }
  static Reply Ok(ChatResponse response);
  static Reply Fail(LlmErrorKind kind, std::string detail, int http_status = 0);
  static Reply Fail(CallError error);
};

// Folds a streamed answer's events, in order, into one Reply. partial() shows what has arrived
// so far, so a caller can watch an answer grow (client.cc's StreamWatch).
class StreamFold {
 public:
  virtual ~StreamFold() = default;
  // Applies one event. An error event is kept: Finish() returns it, and later events change
  // nothing.
  virtual void Add(const SseEvent& event) = 0;
  // The answer so far: text, reasoning, and whatever ids and usage have been sent.
  virtual const ChatResponse& partial() const = 0;
  // The whole answer; the stream's error; or [bad_response] if it ended before its finish.
  virtual Reply Finish() = 0;
};

class WireCodec {
 public:
  virtual ~WireCodec() = default;

  // Builds the HTTP request for `request`, whose options.model is already filled in. `key` may
  // be empty (local servers): then no auth header is sent. With settings.stream the request
  // asks for a server-sent event stream (with usage, where the API needs asking). On failure (a request this API
  // cannot express) returns InvalidArgument tagged [bad_request] or [config].
  virtual Result<HttpRequest> BuildRequest(const ChatRequest& request,
                                           const ProviderSettings& settings,
                                           const Secret& key) const = 0;

  // Interprets a response of any status. 2xx: the answer (a filtered answer is a response with
  // FinishReason::kContentFilter and `refusal` set) or [bad_response]. Otherwise: the error,
  // classified from the status and the provider's error body.
  virtual Reply ParseReply(const HttpResponse& response) const = 0;

  // A fold for one streamed answer (the body of a 2xx text/event-stream response).
  virtual std::unique_ptr<StreamFold> NewStreamFold() const = 0;

  // Folds a whole text/event-stream body into one Reply.
  Reply ParseStream(std::string_view sse_body) const;
};

std::unique_ptr<WireCodec> NewOpenAiWire();
std::unique_ptr<WireCodec> NewAnthropicWire();
std::unique_ptr<WireCodec> NewGeminiWire();
// REQUIRES: wire != WireFormat::kReplay.
std::unique_ptr<WireCodec> NewWire(WireFormat wire);

// --- Shared by the wire formats -------------------------------------------------------------

// Error kind implied by an HTTP status alone (before the body is read).
LlmErrorKind KindFromHttpStatus(int status);
// True if an error message says the prompt exceeds the context window (OpenAI, vLLM,
// llama.cpp, Anthropic and Gemini wordings).
bool LooksLikeContextTooLong(std::string_view message);
// "HTTP 401 invalid_api_key: <message>"; the message is cut to 500 characters.
std::string DescribeHttpError(int status, std::string_view code, std::string_view message);
// For a body that is not the provider's JSON error: "HTTP 502: <start of the body>".
std::string DescribeRawBody(int status, std::string_view body);
// "data:<mime>;base64,<data>" etc. need base64: standard alphabet, padded.
std::string Base64Encode(std::string_view bytes);
// Joins base_url and a path with exactly one '/'.
std::string JoinUrl(std::string_view base_url, std::string_view path);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_WIRE_H_
