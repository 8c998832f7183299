#include "agent/prompt_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "agent/prompt_template.h"

namespace kforge {

using nlohmann::json;

namespace {

void Count(const std::string& text, PromptSize* size) {
  size->chars += static_cast<int64_t>(text.size());
  size->digits +=
      std::count_if(text.begin(), text.end(), [](unsigned char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

PromptSize MeasurePrompt(const llm::ChatRequest& request) {
  PromptSize size;
  Count(request.system, &size);
  for (const llm::Message& m : request.messages)
    for (const llm::ContentPart& part : m.parts)
      if (!part.is_image()) Count(part.text, &size);
  const int64_t messages =
      static_cast<int64_t>(request.messages.size()) + (request.system.empty() ? 0 : 1);
  const double other = static_cast<double>(size.chars - size.digits);
  size.estimated_tokens = size.digits +
                          static_cast<int64_t>(std::ceil(other / kPromptBytesPerToken)) +
                          kTokensPerMessage * messages + kTokensPerRequest;
  return size;
}

json PromptLimits::ToJson() const {
  return {{"profile", llm::PromptProfileName(profile)},
          {"context_window", context_window},
          {"answer_tokens", answer_tokens}};
}

PromptLimits PromptLimits::FromJson(const json& j) {
  PromptLimits limits;
  if (!j.is_object()) return limits;
  Result<llm::PromptProfile> profile = llm::ParsePromptProfile(j.value("profile", "full"));
  if (profile.ok()) limits.profile = *profile;
  limits.context_window = j.value("context_window", int64_t{0});
  limits.answer_tokens = j.value("answer_tokens", int64_t{0});
  return limits;
}

PromptLimits LimitsFromSettings(const llm::ProviderSettings& settings) {
  PromptLimits limits;
  limits.profile = settings.prompt_profile;
  limits.context_window = settings.context_window.value_or(0);
  limits.answer_tokens = settings.max_output_tokens.value_or(settings.default_max_output_tokens);
  return limits;
}

int64_t AnswerRoom(const llm::ChatRequest& request, const PromptLimits& limits) {
  return request.options.max_output_tokens ? *request.options.max_output_tokens
                                           : limits.answer_tokens;
}

bool FitsWindow(const llm::ChatRequest& request, const PromptLimits& limits) {
  if (limits.context_window <= 0) return true;
  return MeasurePrompt(request).estimated_tokens + AnswerRoom(request, limits) <=
         limits.context_window;
}

namespace {

// Drops the first (oldest) line of the memory; false when it is empty.
bool DropOldestMemoryLine(std::string* memory) {
  if (memory->empty()) return false;
  size_t end = memory->find('\n');
  memory->erase(0, end == std::string::npos ? std::string::npos : end + 1);
  return true;
}

void Note(std::string* shrunk, const std::string& what) {
  *shrunk += (shrunk->empty() ? "" : "; ") + what;
}

std::string Lines(int n, const char* what) {
  return fmt::format("dropped {} oldest {} line{}", n, what, n == 1 ? "" : "s");
}

Result<llm::ChatRequest> WithOptions(const GenerationContext& ctx,
                                     const llm::ChatOptions& options) {
  KF_ASSIGN_OR_RETURN(llm::ChatRequest request, BuildGenerationRequest(ctx));
  request.options = options;
  return request;
}

Result<llm::ChatRequest> AnalystRequest(const AnalystInput& in, const json& profile, int indent,
                                        const llm::ChatOptions& options) {
  TemplateVars vars = {{"problem_name", in.problem_name},
                       {"backend", in.backend},
                       {"source", in.source},
                       {"profile", profile.dump(indent)}};
  llm::ChatRequest request;
  KF_ASSIGN_OR_RETURN(request.system, RenderPrompt("analyst_system.md", vars));
  KF_ASSIGN_OR_RETURN(std::string user, RenderPrompt("analyze.md", vars));
  request.messages.push_back(llm::Message::User(std::move(user)));
  request.options = options;
  return request;
}

}  // namespace

Result<FittedRequest> FitGenerationRequest(GenerationContext ctx, const llm::ChatOptions& options,
                                           const PromptLimits& limits) {
  ctx.profile = limits.profile;
  FittedRequest fitted;
  KF_ASSIGN_OR_RETURN(fitted.request, WithOptions(ctx, options));
  int dropped = 0;
  while (!FitsWindow(fitted.request, limits) && DropOldestMemoryLine(&ctx.memory)) {
    ++dropped;
    KF_ASSIGN_OR_RETURN(fitted.request, WithOptions(ctx, options));
  }
  if (dropped > 0) Note(&fitted.shrunk, Lines(dropped, "memory"));
  if (!FitsWindow(fitted.request, limits) && ctx.profile == llm::PromptProfile::kFull) {
    ctx.profile = llm::PromptProfile::kCompact;
    KF_ASSIGN_OR_RETURN(fitted.request, WithOptions(ctx, options));
    Note(&fitted.shrunk, "compact profile");
  }
  return fitted;
}

Result<FittedRequest> FitAnalystRequest(const AnalystInput& in, const llm::ChatOptions& options,
                                        const PromptLimits& limits) {
  FittedRequest fitted;
  KF_ASSIGN_OR_RETURN(fitted.request, AnalystRequest(in, in.profile, 1, options));
  if (FitsWindow(fitted.request, limits)) return fitted;
  KF_ASSIGN_OR_RETURN(fitted.request, AnalystRequest(in, in.profile, -1, options));
  fitted.shrunk = "profile without indentation";
  if (FitsWindow(fitted.request, limits) || !in.profile.is_object()) return fitted;
  json lean = in.profile;
  lean.erase("baselines");
  lean.erase("counters");
  KF_ASSIGN_OR_RETURN(fitted.request, AnalystRequest(in, lean, -1, options));
  Note(&fitted.shrunk, "profile without baselines and counters");
  return fitted;
}

FittedRequest FitFollowUp(const FittedRequest& first, const std::string& answer,
                          const std::string& again, const PromptLimits& limits) {
  FittedRequest next = first;
  next.request.messages.push_back(llm::Message::Assistant(answer));
  next.request.messages.push_back(llm::Message::User(again));
  if (FitsWindow(next.request, limits)) return next;
  // One turn: the first request's messages, with `again` after its last user message.
  next = first;
  for (auto it = next.request.messages.rbegin(); it != next.request.messages.rend(); ++it) {
    if (it->role != llm::Role::kUser) continue;
    it->parts.push_back(llm::ContentPart::Text("\n\n" + again));
    break;
  }
  Note(&next.shrunk, "re-asked without the earlier answer");
  return next;
}

Status CheckFits(const FittedRequest& fitted, const PromptLimits& limits, std::string_view who) {
  if (FitsWindow(fitted.request, limits)) return Status::Ok();
  PromptSize size = MeasurePrompt(fitted.request);
  return llm::MakeLlmError(
      llm::LlmErrorKind::kContextTooLong, who,
      fmt::format(
          "not sent: the prompt is ~{} tokens ({} chars, estimated{}) and {} tokens are kept for "
          "the answer, "
          "over the model's context window of {} tokens. Lower the answer's cap "
          "(--generator-max-output-tokens, "
          "--analyst-max-output-tokens or max_output_tokens), shorten --instructions and --context "
          "files, or "
          "give the server a larger context and say so with context_window in the LLM config "
          "(scripts/local-llm: KFORGE_LLM_CTX=32768)",
          size.estimated_tokens, size.chars,
          fitted.shrunk.empty() ? "" : "; already shrunk: " + fitted.shrunk,
          AnswerRoom(fitted.request, limits), limits.context_window));
}

}  // namespace kforge
