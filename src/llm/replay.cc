// The replay provider (replay.h).
#include "llm/replay.h"

#include <mutex>
#include <set>

#include "llm/transcript.h"

namespace kforge::llm {

namespace {

std::string Short(const Json* value) {
  if (!value) return "(absent)";
  std::string text = value->dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

std::string Describe(const std::string& path, const Json* recorded, const Json* now) {
  return (path.empty() ? std::string("(whole request)") : path) + ": recorded " + Short(recorded) +
         ", now " + Short(now);
}

std::string Diff(const Json& recorded, const Json& now, const std::string& path);

std::string DiffObjects(const Json& recorded, const Json& now, const std::string& path) {
  std::set<std::string> keys;
  for (const auto& [key, value] : recorded.items()) keys.insert(key);
  for (const auto& [key, value] : now.items()) keys.insert(key);
  for (const std::string& key : keys) {
    std::string child = path.empty() ? key : path + "." + key;
    bool in_recorded = recorded.contains(key), in_now = now.contains(key);
    if (!in_recorded || !in_now) {
      return Describe(child, in_recorded ? &recorded[key] : nullptr, in_now ? &now[key] : nullptr);
    }
    std::string difference = Diff(recorded[key], now[key], child);
    if (!difference.empty()) return difference;
  }
  return "";
}

std::string DiffArrays(const Json& recorded, const Json& now, const std::string& path) {
  size_t common = std::min(recorded.size(), now.size());
  for (size_t i = 0; i < common; ++i) {
    std::string difference = Diff(recorded[i], now[i], path + "[" + std::to_string(i) + "]");
    if (!difference.empty()) return difference;
  }
  if (recorded.size() == now.size()) return "";
  return path + ": recorded " + std::to_string(recorded.size()) + " items, now " +
         std::to_string(now.size());
}

std::string Diff(const Json& recorded, const Json& now, const std::string& path) {
  if (recorded == now) return "";
  if (recorded.is_object() && now.is_object()) return DiffObjects(recorded, now, path);
  if (recorded.is_array() && now.is_array()) return DiffArrays(recorded, now, path);
  return Describe(path, &recorded, &now);
}

class ReplayClient : public LlmClient {
 public:
  ReplayClient(std::string name, std::vector<TranscriptEntry> entries,
               std::shared_ptr<UsageLedger> ledger)
      : name_(std::move(name)), entries_(std::move(entries)), ledger_(std::move(ledger)) {}

  Result<ChatResponse> Complete(const ChatRequest& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_ >= entries_.size()) {
      return MakeLlmError(LlmErrorKind::kReplayExhausted, name_,
                          "all " + std::to_string(entries_.size()) +
                              " recorded exchanges were served; this run makes more requests "
                              "than the recorded one");
    }
    const TranscriptEntry& entry = entries_[next_];
    std::string difference = Diff(entry.request, RequestToJson(request), "");
    if (!difference.empty()) {
      return MakeLlmError(LlmErrorKind::kReplayDivergence, name_,
                          "request " + std::to_string(next_ + 1) + " of " +
                              std::to_string(entries_.size()) + " differs from the recording at " +
                              difference);
    }
    ++next_;
    if (!entry.response) return entry.error;
    ledger_->Record(entry.client, entry.response->usage, entry.response->cost_usd);
    return *entry.response;
  }

  std::string Describe() const override { return name_; }
  // A run replayed must ask what it asked when recorded: with images where the recording has them.
  bool AcceptsImages() const override {
    for (const TranscriptEntry& entry : entries_)
      for (const Json& message : entry.request.value("messages", Json::array()))
        for (const Json& part : message.value("parts", Json::array()))
          if (part.contains("image")) return true;
    return false;
  }

 private:
  const std::string name_;
  std::mutex mu_;
  const std::vector<TranscriptEntry> entries_;
  size_t next_ = 0;
  std::shared_ptr<UsageLedger> ledger_;
};

}  // namespace

std::string FirstDifference(const Json& recorded, const Json& now) {
  return Diff(recorded, now, "");
}

Result<std::unique_ptr<LlmClient>> NewReplayClient(const std::filesystem::path& transcript,
                                                   std::shared_ptr<UsageLedger> ledger) {
  KF_ASSIGN_OR_RETURN(std::vector<TranscriptEntry> entries, ReadTranscript(transcript));
  return std::unique_ptr<LlmClient>(
      new ReplayClient("replay:" + transcript.string(), std::move(entries), std::move(ledger)));
}

}  // namespace kforge::llm
