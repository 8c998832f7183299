// The opt-in response cache: answers keyed by a hash of the full request.
//
// Key: XXH3-128 over {"client": Describe(), "request": RequestToJson(request)}; image parts
// enter through the hash of their bytes, so the key covers the whole request. Files:
// <dir>/<2 hex>/<32 hex>.json holding {"v":1, "key":{...}, "response":{...}}. A hit is checked
// against the stored key (no false hit on a hash collision). Only successful answers are
// stored. A hit returns from_cache = true, cost_usd = 0, attempts = 0, and counts as a cache
// hit (not a call) in the ledger. Files are written atomically (temp file + rename) and pass
// through Redact().
//
// Thread-safety: safe from many threads and processes (last writer wins, both write the same).
#ifndef KFORGE_LLM_CACHE_H_
#define KFORGE_LLM_CACHE_H_

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kforge/llm/llm.h"
#include "kforge/llm/pricing.h"
#include "llm/json_util.h"

namespace kforge::llm {

class ResponseCache {
 public:
  // Creates the folder if needed. IoError if it cannot.
  static Result<std::unique_ptr<ResponseCache>> Open(const std::filesystem::path& dir);

  static Json KeyOf(const std::string& client, const ChatRequest& request);
  std::optional<ChatResponse> Get(const Json& key) const;
  Status Put(const Json& key, const ChatResponse& response) const;

 private:
  explicit ResponseCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::filesystem::path PathOf(const Json& key) const;
  std::filesystem::path dir_;
};

std::unique_ptr<LlmClient> NewCachingClient(std::unique_ptr<LlmClient> inner,
                                            std::shared_ptr<ResponseCache> cache,
                                            std::shared_ptr<UsageLedger> ledger,
                                            std::function<void(std::string_view)> log);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_CACHE_H_
