// The LLM client interface: how kforge's agents talk to a model.
//
// A ChatRequest (system prompt, messages made of text and image parts, options) goes to an
// LlmClient; a ChatResponse (text, finish reason, token usage, latency, the provider's request
// id, cost) comes back. Failures come back as a Status whose message carries a bracketed kind tag
// such as "[auth]" or "[context_too_long]" (see LlmErrorKind and LlmErrorKindOf), names the
// provider, quotes what the provider said, and says what to do. No message ever contains an API
// key (see secrets.h).
//
// Clients are made by LlmSession (session.h) from a model string such as "openai:gpt-5".
//
// Thread-safety: the value types here are plain values. Every LlmClient made by LlmSession is
// safe to call from several threads at once.
#ifndef KFORGE_LLM_LLM_H_
#define KFORGE_LLM_LLM_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/status.h"

namespace kforge::llm {

enum class Role { kUser, kAssistant };

// One piece of a message: text, or an encoded PNG/JPEG image.
struct ContentPart {
  enum class Kind { kText, kImage };
  Kind kind = Kind::kText;
  std::string text;       // kText only.
  std::string mime_type;  // kImage only: "image/png" or "image/jpeg".
  std::string data;       // kImage only: the encoded file bytes (raw, not base64).

  static ContentPart Text(std::string text);
  // REQUIRES: mime_type is "image/png" or "image/jpeg" and bytes hold such an image.
  // MakeImagePart checks this for you.
  static ContentPart Image(std::string mime_type, std::string bytes);
  bool is_image() const { return kind == Kind::kImage; }
};

// Returns an image part for PNG or JPEG bytes, recognised by their signature.
// On failure (empty, or another format) returns InvalidArgument.
Result<ContentPart> MakeImagePart(std::string bytes);
// Reads a PNG or JPEG file into an image part. NotFound/IoError if it cannot be read.
Result<ContentPart> LoadImagePart(const std::filesystem::path& path);

struct Message {
  Role role = Role::kUser;
  std::vector<ContentPart> parts;

  static Message User(std::string text);
  static Message Assistant(std::string text);
  bool HasImages() const;
};

// How hard a reasoning model should think. kUnset sends nothing and lets the provider decide.
// Mapping per provider is in docs/llm.md (OpenAI reasoning_effort, Anthropic thinking budget,
// Gemini thinkingBudget).
enum class ReasoningEffort { kUnset, kNone, kMinimal, kLow, kMedium, kHigh };
// "low" -> kLow etc.; InvalidArgument for an unknown word.
Result<ReasoningEffort> ParseReasoningEffort(std::string_view word);
std::string_view ReasoningEffortName(ReasoningEffort effort);

struct ChatOptions {
  std::string model;                     // Empty: the client's own model.
  std::optional<double> temperature;     // Unset: the provider's default.
  std::optional<int> max_output_tokens;  // Unset: the provider's default (Anthropic: config).
  // Sampling seed, for repeatable answers where the server honours it: OpenAI-family "seed"
  // (llama.cpp, vLLM, Ollama, OpenAI's best effort), Gemini generationConfig.seed. The
  // Anthropic Messages API has no seed; it is not sent there. Unset: none is sent.
  std::optional<int64_t> seed;
  ReasoningEffort reasoning_effort = ReasoningEffort::kUnset;
  std::vector<std::string> stop;  // Stop sequences.
};

// A file the request is about (the candidate the prompt repairs or optimizes), for clients that
// work on files: exec: (exec.h) copies it into the command's input folder. HTTP clients ignore
// it, since the prompt's text holds the same content; transcripts, replay and the cache leave it
// out of the request they compare.
struct RequestFile {
  std::string name;  // A plain file name ("candidate.cc"): no folder, not "." or "..".
  std::string content;
};

// How a streamed answer is coming along; handed to ChatRequest::on_progress as it arrives.
struct StreamProgress {
  int64_t tokens = 0;            // Pieces of answer (text or reasoning) so far: about a token each.
  int64_t chars = 0;             // Characters of visible text so far.
  std::chrono::milliseconds first_token{0};  // From the request's start to the first piece.
  std::chrono::milliseconds elapsed{0};      // From the request's start to now.
  double TokensPerSecond() const;  // Since the first piece; 0 before two pieces.
};

struct ChatRequest {
  std::string system;  // Empty: no system prompt.
  std::vector<Message> messages;
  ChatOptions options;
  std::vector<RequestFile> files = {};  // For exec: only (see RequestFile).
  // Streamed calls only: called now and then (at most about once a second, and on the first
  // piece) from the calling thread while the answer arrives. Not part of the request's content.
  std::function<void(const StreamProgress&)> on_progress;

  bool HasImages() const;
};

enum class FinishReason {
  kUnknown,        // The provider did not say (e.g. Ollama without done_reason).
  kStop,           // Natural end of the answer.
  kLength,         // Hit max_output_tokens (or the context window).
  kStopSequence,   // Hit one of ChatOptions::stop.
  kToolCalls,      // The model asked for a tool; kforge sends no tools, so rare.
  kContentFilter,  // Blocked by the provider's safety system. Complete() turns it into an error.
  kRepetition,     // kforge stopped a streamed answer that kept repeating itself.
  kOther,
};
std::string_view FinishReasonName(FinishReason reason);
FinishReason FinishReasonFromName(std::string_view name);  // kUnknown for unknown names.

// Token counts, normalised across providers (see docs/llm.md for the mapping).
struct Usage {
  int64_t input_tokens = 0;         // All prompt tokens, cached ones included.
  int64_t cached_input_tokens = 0;  // Of input_tokens: read from the provider's prompt cache.
  int64_t cache_write_tokens = 0;   // Of input_tokens: written to the prompt cache (Anthropic).
  int64_t output_tokens = 0;        // All generated tokens, reasoning included.
  int64_t reasoning_tokens = 0;     // Of output_tokens: reasoning/thinking tokens.

  Usage& operator+=(const Usage& other);
  bool operator==(const Usage& other) const = default;
};

struct ChatResponse {
  std::string text;       // The answer (visible text parts joined).
  std::string reasoning;  // Reasoning/thinking text where the API returns it; else empty.
  FinishReason finish_reason = FinishReason::kUnknown;
  std::string raw_finish_reason;  // As the provider spelled it ("end_turn", "MAX_TOKENS", ...).
  std::string refusal;            // Why the provider filtered the answer, when it did.
  Usage usage;
  std::optional<double> cost_usd;        // Unset when the price table has no entry for the model.
  std::chrono::milliseconds latency{0};  // The successful attempt's round trip.
  // Streamed answers: from the successful attempt's start to its first piece of answer (the
  // server's queue and its reading of the prompt). Zero when not streamed.
  std::chrono::milliseconds first_token{0};
  // The server's own compute time for this answer where it reports one (llama.cpp's
  // timings.prompt_ms + predicted_ms); latency minus this is time spent queueing or in transit.
  std::optional<std::chrono::milliseconds> server_time;
  bool streamed = false;
  // The usage is kforge's estimate, not the server's count: a streamed answer stopped by kforge
  // (kRepetition) ends before the server reports usage. Output: the pieces received; input: the
  // prompt's bytes / 4.
  bool usage_estimated = false;
  std::chrono::milliseconds total_time{0};  // Including failed attempts and retry waits.
  std::string request_id;   // The provider's request id (header), else the response id.
  std::string model;        // The model that answered, as the provider names it.
  int attempts = 1;         // HTTP attempts made (1 = no retry).
  bool from_cache = false;  // Served from the response cache.
};

// What went wrong in a call. Each kind has a tag that appears in the Status message as
// "[tag]"; LlmErrorKindOf() reads it back, so callers can react (shrink the prompt on
// kContextTooLong, stop the run on kBudgetExceeded, ...).
enum class LlmErrorKind {
  kNone,               // Not an LLM error (or an OK status).
  kAuth,               // The key was rejected (HTTP 401, Gemini API_KEY_INVALID).
  kPermissionDenied,   // The key works but may not do this (HTTP 403).
  kModelNotFound,      // Unknown model, or no access to it (HTTP 404).
  kContextTooLong,     // The prompt does not fit the model's context window.
  kContentFiltered,    // The provider's safety system blocked the prompt or the answer.
  kRateLimited,        // HTTP 429 that a wait can fix. Retried.
  kQuotaExhausted,     // Out of credit or quota; waiting will not help. Not retried.
  kOverloaded,         // HTTP 503/529: the provider is busy. Retried.
  kServerError,        // Other HTTP 5xx. Retried (except 501/505).
  kTimeout,            // No complete answer within the timeout. Retried.
  kConnectionFailed,   // Could not connect (refused, DNS, TLS). Not retried.
  kConnectionLost,     // Connection reset or body cut short. Retried.
  kBadRequest,         // The provider rejected the request for another reason (HTTP 400/422).
  kBadResponse,        // The provider's answer could not be understood. Not retried.
  kVisionUnsupported,  // Images sent to a model or provider without vision.
  kReplayDivergence,   // Replay: the request differs from the recorded one.
  kReplayExhausted,    // Replay: the transcript has no more exchanges.
  kBudgetExceeded,     // The session's cost budget is spent.
  kConfig,             // Bad model string, config file, or missing key.
  kCommandFailed,      // exec: the command could not start, failed, or was killed.
};

// The tag written inside brackets, e.g. "auth", "context_too_long".
std::string_view LlmErrorKindTag(LlmErrorKind kind);
// Finds the first "[tag]" in the status message; kNone if the status is OK or has no tag.
LlmErrorKind LlmErrorKindOf(const Status& status);
// True for the kinds that a retry can fix: rate limits, overload, 5xx, timeouts, resets.
bool IsRetryableKind(LlmErrorKind kind);
// Builds "<who>: [tag] <detail>" with the StatusCode that fits the kind. The message passes
// through secret redaction (secrets.h) so no registered key can appear in it.
Status MakeLlmError(LlmErrorKind kind, std::string_view who, std::string_view detail);

// A chat model behind some provider.
class LlmClient {
 public:
  virtual ~LlmClient() = default;

  // Sends one request and waits for the whole answer (non-streaming), retrying where a retry
  // can help. On success returns the response with usage and cost filled in. On failure returns
  // a Status tagged with an LlmErrorKind; a filtered answer is the error kContentFiltered.
  virtual Result<ChatResponse> Complete(const ChatRequest& request) = 0;

  // "openai:gpt-5", "replay:/path/run.jsonl", ...: what this client talks to.
  virtual std::string Describe() const = 0;

  // Whether requests may carry image parts (docs/llm.md, "Images"): for HTTP clients the model's
  // `vision` setting (the config's, else the price table's, else the preset's default); replay:
  // whether the recording holds images; exec: and others no. Agents that can also say it in
  // text (the analyst's profile images) attach images only when this is true.
  virtual bool AcceptsImages() const { return false; }
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_LLM_H_
