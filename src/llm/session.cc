// LlmSession (session.h): builds client stacks over shared state.
#include "kforge/llm/session.h"

#include <iostream>
#include <map>
#include <mutex>
#include <random>

#include "base/subprocess.h"
#include "kforge/llm/secrets.h"
#include "llm/cache.h"
#include "llm/client.h"
#include "llm/exec.h"
#include "llm/limiter.h"
#include "llm/replay.h"
#include "llm/transcript.h"

namespace kforge::llm {

struct LlmSession::Shared {
  LlmConfig config;
  std::shared_ptr<const PriceTable> prices;
  std::shared_ptr<UsageLedger> ledger = std::make_shared<UsageLedger>();
  LlmDeps deps;
  std::shared_ptr<TranscriptWriter> transcript;
  std::shared_ptr<ResponseCache> cache;
  std::mutex mu;
  std::map<std::string, std::shared_ptr<ConcurrencyLimiter>> limiters;  // Key: provider|url.

  std::shared_ptr<ConcurrencyLimiter> LimiterFor(const ProviderSettings& settings) {
    std::lock_guard<std::mutex> lock(mu);
    std::shared_ptr<ConcurrencyLimiter>& limiter =
        limiters[settings.provider + "|" + settings.base_url];
    if (!limiter) limiter = std::make_shared<ConcurrencyLimiter>(settings.max_concurrency);
    return limiter;
  }

  std::shared_ptr<ProcessRunner> Runner() {
    std::lock_guard<std::mutex> lock(mu);
    if (!deps.runner) deps.runner = NewSandboxRunner();
    return deps.runner;
  }

  // "exec:NAME": the command, given no key and never cached (its answers are not repeatable).
  Result<std::unique_ptr<LlmClient>> NewExec(std::string_view model) {
    KF_ASSIGN_OR_RETURN(ExecSettings settings, ResolveExec(model, config));
    ExecEnv env;
    env.runner = Runner();
    env.clock = deps.clock;
    env.ledger = ledger;
    env.log = deps.log;
    env.environment = ProcessEnvironment();
    env.key_env_names = ApiKeyEnvNames(config);
    return NewExecClient(std::move(settings), std::move(env));
  }
};

namespace {

std::function<double()> SeededRandom() {
  struct State {
    std::mutex mu;
    std::mt19937_64 engine{std::random_device{}()};
  };
  auto state = std::make_shared<State>();
  return [state] {
    std::lock_guard<std::mutex> lock(state->mu);
    return std::uniform_real_distribution<double>(0.0, 1.0)(state->engine);
  };
}

void LogToStderr(std::string_view line) { std::cerr << Redact(line) << "\n"; }

LlmDeps WithDefaults(LlmDeps deps) {
  if (!deps.transport) deps.transport = NewCurlTransport();
  if (!deps.clock) deps.clock = SystemClock();
  if (!deps.random01) deps.random01 = SeededRandom();
  if (!deps.log) {
    deps.log = LogToStderr;
  } else {
    deps.log = [log = deps.log](std::string_view line) { log(Redact(line)); };
  }
  return deps;
}

Result<std::shared_ptr<const PriceTable>> LoadPrices(const LlmConfig& config) {
  if (config.prices_file.empty()) {
    return std::shared_ptr<const PriceTable>(std::shared_ptr<void>(), &PriceTable::BuiltIn());
  }
  KF_ASSIGN_OR_RETURN(PriceTable table, PriceTable::Load(config.prices_file));
  return std::shared_ptr<const PriceTable>(std::make_shared<PriceTable>(std::move(table)));
}

}  // namespace

Result<std::unique_ptr<LlmSession>> LlmSession::Create(const LlmConfig& config, LlmDeps deps) {
  auto shared = std::make_shared<Shared>();
  shared->config = config;
  shared->deps = WithDefaults(std::move(deps));
  KF_ASSIGN_OR_RETURN(shared->prices, LoadPrices(config));
  shared->ledger->SetBudget(config.budget_usd);
  if (!config.transcript.empty()) {
    KF_ASSIGN_OR_RETURN(shared->transcript, TranscriptWriter::Open(config.transcript));
  }
  if (!config.cache_dir.empty()) {
    KF_ASSIGN_OR_RETURN(shared->cache, ResponseCache::Open(config.cache_dir));
  }
  return std::unique_ptr<LlmSession>(new LlmSession(std::move(shared)));
}

LlmSession::LlmSession(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
LlmSession::~LlmSession() = default;

Result<std::unique_ptr<LlmClient>> LlmSession::NewClient(std::string_view model) {
  std::string_view name = model.empty() ? std::string_view(shared_->config.default_model) : model;
  if (IsExecModel(name)) {
    KF_ASSIGN_OR_RETURN(std::unique_ptr<LlmClient> client, shared_->NewExec(name));
    if (!shared_->transcript) return client;
    return NewRecordingClient(std::move(client), shared_->transcript, shared_->deps.log);
  }
  KF_ASSIGN_OR_RETURN(ProviderSettings settings, ResolveModel(model, shared_->config));
  std::unique_ptr<LlmClient> client;
  const LlmDeps& deps = shared_->deps;
  if (settings.wire == WireFormat::kReplay) {
    KF_ASSIGN_OR_RETURN(client, NewReplayClient(settings.base_url, shared_->ledger));
  } else {
    KF_ASSIGN_OR_RETURN(Secret key, LoadApiKey(settings.api_key_env, settings.api_key_file,
                                               settings.key_required, settings.Name()));
    ClientEnv env{deps.transport,
                  deps.clock,
                  deps.random01,
                  deps.log,
                  shared_->prices,
                  shared_->ledger,
                  shared_->LimiterFor(settings),
                  shared_->config.retry};
    client = NewHttpClient(settings, std::move(key), std::move(env));
    if (shared_->cache) {
      client = NewCachingClient(std::move(client), shared_->cache, shared_->ledger, deps.log);
    }
  }
  bool replaying_same_file = settings.wire == WireFormat::kReplay && shared_->transcript &&
                             shared_->transcript->path() == settings.base_url;
  if (shared_->transcript && !replaying_same_file) {
    client = NewRecordingClient(std::move(client), shared_->transcript, deps.log);
  }
  return client;
}

const UsageLedger& LlmSession::ledger() const { return *shared_->ledger; }
const PriceTable& LlmSession::prices() const { return *shared_->prices; }
const LlmConfig& LlmSession::config() const { return shared_->config; }

}  // namespace kforge::llm
