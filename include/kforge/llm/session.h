// LlmSession: the one object a run needs to talk to models.
//
// A session holds what its clients share: the config, the price table, the usage ledger (and
// budget), one concurrency limit per provider endpoint, the transcript being recorded, the
// response cache, and the seams (HTTP transport, clock, randomness, log). NewClient() turns a
// model string into a ready client:
//
//   auto session = LlmSession::Create(config);          // Result<std::unique_ptr<LlmSession>>
//   auto client = (*session)->NewClient("openai:gpt-5"); // Result<std::unique_ptr<LlmClient>>
//   auto answer = (*client)->Complete(request);
//
// Each client is a stack: [record to transcript] -> [response cache] -> provider (HTTP with
// retries, or replay). Layers that the config does not ask for are left out. An "exec:" model
// (a coding-agent CLI, src/llm/exec.h) is [record to transcript] -> the command: never cached,
// and given no key.
//
// Thread-safety: NewClient and ledger() are safe from many threads. Clients stay valid after the
// session is destroyed (they share its state).
#ifndef KFORGE_LLM_SESSION_H_
#define KFORGE_LLM_SESSION_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "kforge/llm/config.h"
#include "kforge/llm/llm.h"
#include "kforge/llm/pricing.h"
#include "kforge/llm/transport.h"
#include "kforge/status.h"

namespace kforge {
class ProcessRunner;
}

namespace kforge::llm {

// The seams. Every field may be left empty for the real thing.
struct LlmDeps {
  std::shared_ptr<HttpTransport> transport;   // Default: NewCurlTransport().
  Clock* clock = nullptr;                     // Default: SystemClock(). Must outlive clients.
  std::function<double()> random01;           // Uniform in [0, 1) for jitter. Default: seeded.
  std::function<void(std::string_view)> log;  // One line per call. Default: stderr.
  // Runs exec: commands. Default: NewSandboxRunner() (base/subprocess.h), made on first use.
  std::shared_ptr<ProcessRunner> runner;
};

class LlmSession {
 public:
  // Loads the price table (config.prices_file or the built-in one) and opens the transcript
  // and cache folder when the config names them. Errors are tagged [config] (bad price file)
  // or are IoError (transcript or cache folder not writable).
  static Result<std::unique_ptr<LlmSession>> Create(const LlmConfig& config, LlmDeps deps = {});
  ~LlmSession();

  // A client for a model string or a [models] name (see config.h); "" = default_model.
  // Loads the key (secrets.h), except for "exec:" models. Errors: tagged [config] for a bad
  // string, an unknown name, a missing key or an unknown exec: command; IoError/InvalidArgument
  // when "replay:" names an unreadable transcript.
  Result<std::unique_ptr<LlmClient>> NewClient(std::string_view model);

  const UsageLedger& ledger() const;
  const PriceTable& prices() const;
  const LlmConfig& config() const;

  struct Shared;  // Implementation detail, shared with the clients.

 private:
  explicit LlmSession(std::shared_ptr<Shared> shared);
  std::shared_ptr<Shared> shared_;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_SESSION_H_
