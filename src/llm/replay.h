// The "replay" provider: serves a recorded transcript back, in order.
//
// Each Complete() compares the request (RequestToJson) with the next recorded one. Equal: it
// returns the recorded response (usage and cost go to the ledger as recorded, so budgets behave
// as in the recorded run) or the recorded error, unchanged. Different: [replay_divergence],
// naming the exchange and the first differing field; the position does not advance. Past the
// end: [replay_exhausted].
//
// Thread-safety: Complete() is safe from many threads; exchanges are served in call order, so a
// replay reproduces a run exactly only when the run's calls are themselves ordered.
#ifndef KFORGE_LLM_REPLAY_H_
#define KFORGE_LLM_REPLAY_H_

#include <filesystem>
#include <memory>

#include "kforge/llm/llm.h"
#include "kforge/llm/pricing.h"
#include "llm/json_util.h"

namespace kforge::llm {

// Reads the transcript; NotFound/InvalidArgument if it cannot be read or parsed.
Result<std::unique_ptr<LlmClient>> NewReplayClient(const std::filesystem::path& transcript,
                                                   std::shared_ptr<UsageLedger> ledger);

// "messages[1].parts[0].text: recorded \"a\", now \"b\"" for the first place two JSON values
// differ (object keys in sorted order); "" when they are equal.
std::string FirstDifference(const Json& recorded, const Json& now);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_REPLAY_H_
