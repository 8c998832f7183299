// HttpLlmClient: a WireCodec plus transport, retries, the concurrency limit, vision checks,
// budget checks and accounting. One per (provider, model) string.
//
// A call: fill unset options from the settings -> refuse images without vision -> check the
// budget -> build the HTTP request -> up to retry.max_attempts times { take a concurrency slot,
// POST, interpret } with waits between (Retry-After or backoff) -> price the usage, add it to
// the ledger -> a filtered answer becomes [content_filtered].
//
// Thread-safety: Complete() is safe from many threads at once.
#ifndef KFORGE_LLM_CLIENT_H_
#define KFORGE_LLM_CLIENT_H_

#include <functional>
#include <memory>
#include <string_view>

#include "kforge/llm/config.h"
#include "kforge/llm/llm.h"
#include "kforge/llm/pricing.h"
#include "kforge/llm/secrets.h"
#include "kforge/llm/transport.h"
#include "llm/limiter.h"
#include "llm/wire.h"

namespace kforge::llm {

// What an HTTP client uses besides its settings; shared with the session and other clients.
struct ClientEnv {
  std::shared_ptr<HttpTransport> transport;
  Clock* clock = nullptr;
  std::function<double()> random01;
  std::function<void(std::string_view)> log;
  std::shared_ptr<const PriceTable> prices;
  std::shared_ptr<UsageLedger> ledger;
  std::shared_ptr<ConcurrencyLimiter> limiter;
  RetryPolicy retry;
};

// REQUIRES: every ClientEnv field is set; settings.wire is not kReplay.
std::unique_ptr<LlmClient> NewHttpClient(ProviderSettings settings, Secret key, ClientEnv env);

// Turns one interpreted reply into what Complete() returns, without transport or retries:
// a filtered answer becomes [content_filtered], an error becomes a tagged Status. `who` names
// the client in messages. Used by the client and by the fixture tests.
Result<ChatResponse> ReplyToResult(Reply reply, std::string_view who);

// Whether the model takes images: settings.vision, else the price table's entry, else the
// preset's default.
bool ModelHasVision(const ProviderSettings& settings, const PriceTable& prices);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_CLIENT_H_
