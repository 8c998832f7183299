// The response cache (cache.h).
#include "llm/cache.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "kforge/llm/secrets.h"
#include "llm/transcript.h"

namespace kforge::llm {

namespace {

std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

class CachingClient : public LlmClient {
 public:
  CachingClient(std::unique_ptr<LlmClient> inner, std::shared_ptr<ResponseCache> cache,
                std::shared_ptr<UsageLedger> ledger, std::function<void(std::string_view)> log)
      : inner_(std::move(inner)),
        cache_(std::move(cache)),
        ledger_(std::move(ledger)),
        log_(std::move(log)) {}

  Result<ChatResponse> Complete(const ChatRequest& request) override {
    Json key = ResponseCache::KeyOf(inner_->Describe(), request);
    if (std::optional<ChatResponse> hit = cache_->Get(key)) {
      ledger_->RecordCacheHit(inner_->Describe());
      return *hit;
    }
    Result<ChatResponse> outcome = inner_->Complete(request);
    if (outcome.ok()) {
      Status stored = cache_->Put(key, *outcome);
      if (!stored.ok()) log_("response cache: " + stored.ToString());
    }
    return outcome;
  }

  std::string Describe() const override { return inner_->Describe(); }
  bool AcceptsImages() const override { return inner_->AcceptsImages(); }

 private:
  std::unique_ptr<LlmClient> inner_;
  std::shared_ptr<ResponseCache> cache_;
  std::shared_ptr<UsageLedger> ledger_;
  std::function<void(std::string_view)> log_;
};

}  // namespace

Result<std::unique_ptr<ResponseCache>> ResponseCache::Open(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    return Status::IoError("cannot create the response cache folder " + dir.string());
  }
  return std::unique_ptr<ResponseCache>(new ResponseCache(dir));
}

Json ResponseCache::KeyOf(const std::string& client, const ChatRequest& request) {
  return {{"client", client}, {"request", RequestToJson(request)}};
}

std::filesystem::path ResponseCache::PathOf(const Json& key) const {
  std::string hash = Xxh128Hex(Dump(key));
  return dir_ / hash.substr(0, 2) / (hash + ".json");
}

std::optional<ChatResponse> ResponseCache::Get(const Json& key) const {
  std::ifstream in(PathOf(key));
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  std::string parse_error;
  std::optional<Json> stored = ParseJson(text.str(), &parse_error);
  if (!stored || !stored->contains("key") || (*stored)["key"] != key) return std::nullopt;
  const Json* response = ObjectMember(*stored, "response");
  if (!response) return std::nullopt;
  Result<ChatResponse> parsed = ResponseFromJson(*response);
  if (!parsed.ok()) return std::nullopt;
  ChatResponse hit = std::move(parsed).value();
  hit.from_cache = true;
  hit.cost_usd = 0.0;
  hit.attempts = 0;
  hit.latency = hit.total_time = std::chrono::milliseconds(0);
  return hit;
}

Status ResponseCache::Put(const Json& key, const ChatResponse& response) const {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path path = PathOf(key);
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  std::filesystem::path temp = path;
  temp += ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(temp, std::ios::binary);
    out << Redact(Dump({{"v", 1}, {"key", key}, {"response", ResponseToJson(response)}}));
    if (!out.flush()) return Status::IoError("cannot write " + temp.string());
  }
  std::filesystem::rename(temp, path, error);
  if (error) return Status::IoError("cannot move " + temp.string() + " into place");
  return Status::Ok();
}

std::unique_ptr<LlmClient> NewCachingClient(std::unique_ptr<LlmClient> inner,
                                            std::shared_ptr<ResponseCache> cache,
                                            std::shared_ptr<UsageLedger> ledger,
                                            std::function<void(std::string_view)> log) {
  return std::make_unique<CachingClient>(std::move(inner), std::move(cache), std::move(ledger),
                                         std::move(log));
}

}  // namespace kforge::llm
