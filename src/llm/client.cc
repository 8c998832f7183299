// HttpLlmClient (client.h).
#include "llm/client.h"

#include <atomic>
#include <cstdio>

#include "kforge/llm/secrets.h"
#include "llm/retry.h"
#include "llm/stream_watch.h"

namespace kforge::llm {

namespace {

using std::chrono::milliseconds;

std::string KeySource(const ProviderSettings& settings) {
  if (!settings.api_key_file.empty()) return "the key file " + settings.api_key_file;
  if (!settings.api_key_env.empty()) return "$" + settings.api_key_env;
  return "the configured key";
}

std::string_view WireName(WireFormat wire) {
  switch (wire) {
    case WireFormat::kOpenAi:
      return "OpenAI Chat Completions";
    case WireFormat::kAnthropic:
      return "Anthropic Messages";
    case WireFormat::kGemini:
      return "Gemini generateContent";
    case WireFormat::kReplay:
      return "replay";
  }
  return "";
}

// What the user can do about a final error.
std::string Hint(LlmErrorKind kind, const ProviderSettings& settings, std::string_view model) {
  switch (kind) {
    case LlmErrorKind::kAuth:
      return "check the API key in " + KeySource(settings);
    case LlmErrorKind::kPermissionDenied:
      return "the key was accepted but may not do this; check the account or project settings";
    case LlmErrorKind::kModelNotFound:
      return "check the model name '" + std::string(model) +
             "', that this key may use it, and that base_url " + settings.base_url +
             " is the API root";
    case LlmErrorKind::kContextTooLong:
      if (settings.provider == "local") {
        return "shorten the prompt, or restart the local server with a longer context: "
               "scripts/local-llm stop; KFORGE_LLM_CTX=32768 scripts/local-llm start";
      }
      return "shorten the prompt or choose a model with a longer context window";
    case LlmErrorKind::kQuotaExhausted:
      return "waiting will not help: add credit or raise the quota";
    case LlmErrorKind::kRateLimited:
      return "lower max_concurrency for this provider or raise retry.max_attempts";
    case LlmErrorKind::kOverloaded:
    case LlmErrorKind::kServerError:
      return "the provider is having trouble; try again later";
    case LlmErrorKind::kBadResponse:
      return "the answer does not match the documented " + std::string(WireName(settings.wire)) +
             " format; check base_url " + settings.base_url;
    case LlmErrorKind::kConnectionFailed:
      if (settings.provider == "local") {
        return "is the local model running? scripts/local-llm start starts it (" +
               settings.base_url + ")";
      }
      return "check base_url " + settings.base_url + " and the network and proxy settings";
    default:
      return "";
  }
}

Status ToStatus(const CallError& error, std::string_view who, const std::string& extra) {
  std::string detail = error.detail;
  if (!error.request_id.empty()) detail += " (request id " + error.request_id + ")";
  if (!extra.empty()) detail += "; " + extra;
  return MakeLlmError(error.kind, who, detail);
}

std::string Join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "; " + b;
}

class HttpLlmClient : public LlmClient {
 public:
  HttpLlmClient(ProviderSettings settings, Secret key, ClientEnv env)
      : settings_(std::move(settings)),
        key_(std::move(key)),
        env_(std::move(env)),
        wire_(NewWire(settings_.wire)),
        name_(settings_.Name()) {}

  // Attempts of a call that reconnects to a restarting server (backoff 1, 2, 4, 8, 16, 30, 30 s
  // at the defaults: about a minute and a half, less the jitter).
  static constexpr int kReconnectAttempts = 8;

  Result<ChatResponse> Complete(const ChatRequest& request) override {
    ChatRequest effective = WithDefaults(request);
    const std::string& model = effective.options.model;
    KF_RETURN_IF_ERROR(CheckVision(effective));
    KF_RETURN_IF_ERROR(env_.ledger->CheckBudget());
    KF_ASSIGN_OR_RETURN(HttpRequest http, wire_->BuildRequest(effective, settings_, key_));
    http.connect_timeout = settings_.connect_timeout;
    http.total_timeout = settings_.timeout;
    if (settings_.stream) http.idle_timeout = settings_.idle_timeout;
    return Run(http, effective);
  }

  std::string Describe() const override { return name_; }
  bool AcceptsImages() const override { return ModelHasVision(settings_, *env_.prices); }

 private:
  ChatRequest WithDefaults(const ChatRequest& request) const {
    ChatRequest effective = request;
    ChatOptions& options = effective.options;
    if (options.model.empty()) options.model = settings_.model;
    if (!options.temperature) options.temperature = settings_.temperature;
    if (!options.max_output_tokens) options.max_output_tokens = settings_.max_output_tokens;
    if (!options.seed) options.seed = settings_.seed;
    if (options.reasoning_effort == ReasoningEffort::kUnset) {
      options.reasoning_effort = settings_.reasoning_effort;
    }
    return effective;
  }

  std::string NameFor(const std::string& model) const {
    if (model == settings_.model) return name_;
    ProviderSettings other = settings_;
    other.model = model;
    return other.Name();
  }

  Status CheckVision(const ChatRequest& request) const {
    if (!request.HasImages()) return Status::Ok();
    ProviderSettings settings = settings_;
    settings.model = request.options.model;
    if (ModelHasVision(settings, *env_.prices)) return Status::Ok();
    return MakeLlmError(LlmErrorKind::kVisionUnsupported, NameFor(settings.model),
                        "the request has images but model '" + settings.model +
                            "' is not marked as accepting images; use a vision model, or set "
                            "vision = true for it in the config or price table if it does");
  }

  Result<ChatResponse> Run(const HttpRequest& http, const ChatRequest& request) {
    const std::string& model = request.options.model;
    const auto start = env_.clock->Now();
    bool lost = false;
    for (int attempt = 1;; ++attempt) {
      const auto attempt_start = env_.clock->Now();
      Reply reply = settings_.stream ? StreamedAttempt(http, request, attempt_start) : Attempt(http);
      if (reply.ok()) {
        reached_ = true;
        ChatResponse& response = *reply.response;
        response.attempts = attempt;
        response.latency = Since(attempt_start);
        response.total_time = Since(start);
        Account(model, &response);
        return ReplyToResult(std::move(reply), NameFor(model));
      }
      // A refused connection to a server that answered before (this client's earlier calls, or
      // a connection lost earlier in this call) is a server restarting, not a wrong address:
      // retried, with room for a restart (kReconnectAttempts). A first call that is refused
      // fails at once with the address in the message.
      RetryPolicy policy = env_.retry;
      CallError error = reply.error;
      if (error.http_status != 0) reached_ = true;
      lost |= error.kind == LlmErrorKind::kConnectionLost;
      if (error.kind == LlmErrorKind::kConnectionFailed && (reached_ || lost) && !error.should_retry) {
        error.should_retry = true;
        policy.max_attempts = std::max(policy.max_attempts, kReconnectAttempts);
      }
      RetryDecision decision = DecideRetry(policy, error, attempt, env_.random01());
      if (!decision.retry) {
        std::string hint = Hint(reply.error.kind, settings_, model);
        return ToStatus(reply.error, NameFor(model), Join(decision.why_not, hint));
      }
      LogRetry(reply.error, attempt, decision.wait);
      env_.clock->SleepFor(decision.wait);
    }
  }

  Reply Attempt(const HttpRequest& http) {
    Result<HttpResponse> response = Post(http);
    if (!response.ok()) return Reply::Fail(CallErrorFromStatus(response.status()));
    Reply reply = wire_->ParseReply(*response);
    AddHeaderFacts(*response, &reply);
    return reply;
  }

  // A streamed attempt: the answer is read as it arrives (StreamWatch). A server that answers
  // with a plain JSON body instead (it ignored "stream") is read as an ordinary answer.
  Reply StreamedAttempt(HttpRequest http, const ChatRequest& request,
                        std::chrono::steady_clock::time_point start) {
    StreamWatch watch(*wire_, settings_.stop_on_repetition, env_.clock, start,
                      request.on_progress);
    http.on_body = [&watch](std::string_view bytes) { return watch.OnBytes(bytes); };
    Result<HttpResponse> response = Post(http);
    if (!response.ok()) return Reply::Fail(CallErrorFromStatus(response.status()));
    if (response->status < 200 || response->status >= 300 || !IsEventStream(*response)) {
      Reply reply = wire_->ParseReply(*response);
      AddHeaderFacts(*response, &reply);
      return reply;
    }
    Reply reply = watch.Finish(response->stopped, http.body.size());
    AddHeaderFacts(*response, &reply);
    if (reply.ok()) {
      reply.response->streamed = true;
      reply.response->first_token = watch.first_token();
    }
    return reply;
  }

  static bool IsEventStream(const HttpResponse& response) {
    const std::string* type = response.FindHeader("content-type");
    if (type) return type->find("text/event-stream") != std::string::npos;
    return response.body.rfind("data:", 0) == 0 || response.body.rfind("event:", 0) == 0;
  }

  Result<HttpResponse> Post(const HttpRequest& http) {
    ConcurrencyLimiter::Slot slot = env_.limiter->Acquire();
    return env_.transport->Post(http);
  }

  // Request id, Retry-After and x-should-retry come from headers, whatever the provider.
  void AddHeaderFacts(const HttpResponse& http, Reply* reply) const {
    const std::string* id = http.FindHeader("x-request-id");
    if (!id) id = http.FindHeader("request-id");
    if (reply->ok()) {
      if (id && !id->empty()) reply->response->request_id = *id;
      return;
    }
    CallError& error = reply->error;
    if (id && error.request_id.empty()) error.request_id = *id;
    if (!error.retry_after) error.retry_after = RetryAfterFromHeaders(http, env_.clock->WallNow());
    if (const std::string* verdict = http.FindHeader("x-should-retry")) {
      if (*verdict == "true") error.should_retry = true;
      if (*verdict == "false") error.should_retry = false;
    }
  }

  void Account(const std::string& model, ChatResponse* response) const {
    response->cost_usd = env_.prices->Cost(settings_.provider, model, response->usage);
    env_.ledger->Record(NameFor(model), response->usage, response->cost_usd);
  }

  void LogRetry(const CallError& error, int attempt, milliseconds wait) const {
    std::string why = error.retry_after ? " (as the server asked)" : "";
    env_.log(Redact(name_ + ": attempt " + std::to_string(attempt) + " of " +
                    std::to_string(env_.retry.max_attempts) + " failed: [" +
                    std::string(LlmErrorKindTag(error.kind)) + "] " + error.detail +
                    "; retrying in " + FormatSeconds(wait) + why));
  }

  milliseconds Since(std::chrono::steady_clock::time_point start) const {
    return std::chrono::duration_cast<milliseconds>(env_.clock->Now() - start);
  }

  const ProviderSettings settings_;
  const Secret key_;
  const ClientEnv env_;
  const std::unique_ptr<WireCodec> wire_;
  const std::string name_;
  // Some HTTP response came back from the server once (any status): a refused connection after
  // that is a restart (Run). Complete may run on several threads at once.
  std::atomic<bool> reached_{false};
};

}  // namespace

Result<ChatResponse> ReplyToResult(Reply reply, std::string_view who) {
  if (!reply.ok()) return ToStatus(reply.error, who, "");
  ChatResponse& response = *reply.response;
  if (response.finish_reason == FinishReason::kContentFilter) {
    return MakeLlmError(
        LlmErrorKind::kContentFiltered, who,
        response.refusal + "; the provider's safety system blocked this, rephrase the request");
  }
  return std::move(response);
}

bool ModelHasVision(const ProviderSettings& settings, const PriceTable& prices) {
  if (settings.vision) return *settings.vision;
  const ModelPrice* entry = prices.Find(settings.provider, settings.model);
  if (entry && entry->vision) return *entry->vision;
  return settings.vision_default;
}

std::unique_ptr<LlmClient> NewHttpClient(ProviderSettings settings, Secret key, ClientEnv env) {
  return std::make_unique<HttpLlmClient>(std::move(settings), std::move(key), std::move(env));
}

}  // namespace kforge::llm
