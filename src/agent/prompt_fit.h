// Prompt size and the context window: how big a request is (characters and kforge's estimate of
// its tokens), and the fitting of the agents' prompts into a model's context window before a
// request is sent.
//
// The estimate. Tokens are counted by the server (usage.input_tokens, recorded per call); before
// a call kforge can only estimate: one token per decimal digit (Qwen's and Llama's tokenizers
// split numbers into single digits, and profiles and verdicts are full of them), one per
// kPromptBytesPerToken of the other bytes, plus kTokensPerMessage for each message and the system
// prompt (the chat template's role markers) and kTokensPerRequest. Measured with
// Qwen2.5-Coder's own tokenizer on this repository's prompts (docs/loop.md, "Prompt size"):
// generation prompts 3.2 to 3.5 bytes per token, the analyst's (digit-heavy JSON) 2.3; the
// estimate came out 1% to 25% high on every one. Tokenizers that group digits count fewer. It is
// an estimate: the recorded server count is the truth.
//
// Fitting. A request must leave room for its answer: estimated prompt tokens + the answer's cap
// (the request's max_output_tokens, else PromptLimits::answer_tokens) <= the context window.
// A generation prompt that does not fit is shrunk in this order, each step only while it still
// does not fit: (1) the failed-approaches memory loses its oldest lines, one at a time; (2) the
// full profile switches to the compact one (ABI summary instead of the ABI document). An analyst
// prompt: (1) its profile JSON loses its indentation; (2) the profile loses its baselines and
// hardware counters. What was done is the FittedRequest's `shrunk` note, recorded with the call.
// A request that still does not fit is never sent: CheckFits says [context_too_long] and what to
// do.
//
// Thread-safety: pure functions over values.
#ifndef KFORGE_AGENT_PROMPT_FIT_H_
#define KFORGE_AGENT_PROMPT_FIT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/generator.h"
#include "kforge/llm/config.h"
#include "kforge/llm/llm.h"
#include "kforge/status.h"

namespace kforge {

// Bytes per token of the text besides digits, a little below the lowest ratio measured (2.85).
inline constexpr double kPromptBytesPerToken = 2.8;
inline constexpr int64_t kTokensPerMessage = 5;
inline constexpr int64_t kTokensPerRequest = 3;

struct PromptSize {
  int64_t chars = 0;             // bytes of the system prompt and every text part
  int64_t digits = 0;            // of which decimal digits
  int64_t estimated_tokens = 0;  // kforge's estimate (see above)
};

// The size of everything a request sends as text. Image parts count no characters.
PromptSize MeasurePrompt(const llm::ChatRequest& request);

// One agent role's prompt shape and limits, from its model's settings (llm::ProviderSettings)
// and the optimize command's flags.
struct PromptLimits {
  llm::PromptProfile profile = llm::PromptProfile::kFull;
  int64_t context_window = 0;  // tokens; 0: unknown, nothing is checked or shrunk
  int64_t answer_tokens = 0;   // room kept for the answer when the request sets no cap

  nlohmann::json ToJson() const;
  static PromptLimits FromJson(const nlohmann::json& j);  // missing fields: the defaults
};

// The limits a model's settings imply: its profile and context window; the answer's room is the
// model's max_output_tokens, else its default_max_output_tokens.
PromptLimits LimitsFromSettings(const llm::ProviderSettings& settings);

// Tokens kept for the answer: the request's max_output_tokens, else limits.answer_tokens.
int64_t AnswerRoom(const llm::ChatRequest& request, const PromptLimits& limits);
// True when there is no window, or when the estimate plus the answer's room fits in it.
bool FitsWindow(const llm::ChatRequest& request, const PromptLimits& limits);

struct FittedRequest {
  llm::ChatRequest request;
  std::string shrunk;  // what was cut to fit, e.g. "dropped 2 oldest memory lines; compact
                       // profile"; "" = nothing
};

// The generation request for `ctx` with `options`, shrunk as described above until it fits.
// Returns the smallest request the order allows even when that does not fit (CheckFits refuses
// it). Fails only when a template or a problem file cannot be read.
Result<FittedRequest> FitGenerationRequest(GenerationContext ctx, const llm::ChatOptions& options,
                                           const PromptLimits& limits);

// What the analyst reads: the kernel and its profile (analyst.h, BuildProfile).
struct AnalystInput {
  std::string problem_name, backend, source;
  nlohmann::json profile;
};
// The analyst's request (prompts/analyst_system.md and analyze.md), shrunk as described above.
Result<FittedRequest> FitAnalystRequest(const AnalystInput& input, const llm::ChatOptions& options,
                                        const PromptLimits& limits);

// A follow-up turn: `first` with the model's `answer` and the user's `again` appended. When that
// does not fit, the earlier answer is left out and `again` joins the first user message instead
// (and `shrunk` says so).
FittedRequest FitFollowUp(const FittedRequest& first, const std::string& answer,
                          const std::string& again, const PromptLimits& limits);

// OK when `request` fits; else [context_too_long] from `who`, with the sizes and what to do.
Status CheckFits(const FittedRequest& request, const PromptLimits& limits, std::string_view who);

}  // namespace kforge

#endif  // KFORGE_AGENT_PROMPT_FIT_H_
