// Transcript lines, their writer and reader, and the recording client (transcript.h).
#include "llm/transcript.h"

#include <xxhash.h>

#include <ctime>
#include <fstream>

#include "kforge/llm/secrets.h"

namespace kforge::llm {

namespace {

constexpr int kTranscriptVersion = 1;

const char* RoleName(Role role) { return role == Role::kUser ? "user" : "assistant"; }

Json PartToJson(const ContentPart& part) {
  if (!part.is_image()) return {{"text", part.text}};
  return {{"image",
           {{"mime_type", part.mime_type},
            {"bytes", part.data.size()},
            {"xxh128", Xxh128Hex(part.data)}}}};
}

Json OptionsToJson(const ChatOptions& options) {
  Json json = Json::object();
  if (!options.model.empty()) json["model"] = options.model;
  if (options.temperature) json["temperature"] = *options.temperature;
  if (options.max_output_tokens) json["max_output_tokens"] = *options.max_output_tokens;
  if (options.seed) json["seed"] = *options.seed;
  if (options.reasoning_effort != ReasoningEffort::kUnset) {
    json["reasoning_effort"] = ReasoningEffortName(options.reasoning_effort);
  }
  if (!options.stop.empty()) json["stop"] = options.stop;
  return json;
}

Json UsageToJson(const Usage& usage) {
  return {{"input_tokens", usage.input_tokens},
          {"cached_input_tokens", usage.cached_input_tokens},
          {"cache_write_tokens", usage.cache_write_tokens},
          {"output_tokens", usage.output_tokens},
          {"reasoning_tokens", usage.reasoning_tokens}};
}

Usage UsageFromJson(const Json& json) {
  Usage usage;
  usage.input_tokens = IntMember(json, "input_tokens");
  usage.cached_input_tokens = IntMember(json, "cached_input_tokens");
  usage.cache_write_tokens = IntMember(json, "cache_write_tokens");
  usage.output_tokens = IntMember(json, "output_tokens");
  usage.reasoning_tokens = IntMember(json, "reasoning_tokens");
  return usage;
}

std::string UtcNow() {
  std::time_t now = std::time(nullptr);
  std::tm utc;
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

const char* CodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kIoError:
      return "io_error";
    case StatusCode::kInternal:
      return "internal";
  }
  return "internal";
}

Result<TranscriptEntry> EntryFromJson(const Json& line) {
  TranscriptEntry entry;
  entry.seq = IntMember(line, "seq");
  entry.client = StringMember(line, "client");
  const Json* request = ObjectMember(line, "request");
  if (!request) return Status::InvalidArgument("no \"request\" object");
  entry.request = *request;
  if (const Json* response = ObjectMember(line, "response")) {
    KF_ASSIGN_OR_RETURN(ChatResponse parsed, ResponseFromJson(*response));
    entry.response = std::move(parsed);
  } else if (const Json* error = ObjectMember(line, "error")) {
    entry.error = StatusFromJson(*error);
  } else {
    return Status::InvalidArgument("neither \"response\" nor \"error\"");
  }
  return entry;
}

class RecordingClient : public LlmClient {
 public:
  RecordingClient(std::unique_ptr<LlmClient> inner, std::shared_ptr<TranscriptWriter> writer,
                  std::function<void(std::string_view)> log)
      : inner_(std::move(inner)), writer_(std::move(writer)), log_(std::move(log)) {}

  Result<ChatResponse> Complete(const ChatRequest& request) override {
    Result<ChatResponse> outcome = inner_->Complete(request);
    Status written = writer_->Append(inner_->Describe(), RequestToJson(request), outcome);
    if (!written.ok()) log_("transcript: " + written.ToString());
    return outcome;
  }

  std::string Describe() const override { return inner_->Describe(); }
  bool AcceptsImages() const override { return inner_->AcceptsImages(); }

 private:
  std::unique_ptr<LlmClient> inner_;
  std::shared_ptr<TranscriptWriter> writer_;
  std::function<void(std::string_view)> log_;
};

}  // namespace

std::string Xxh128Hex(std::string_view bytes) {
  XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(hash.high64),
                static_cast<unsigned long long>(hash.low64));
  return text;
}

Json RequestToJson(const ChatRequest& request) {
  Json messages = Json::array();
  for (const Message& message : request.messages) {
    Json parts = Json::array();
    for (const ContentPart& part : message.parts) parts.push_back(PartToJson(part));
    messages.push_back({{"role", RoleName(message.role)}, {"parts", std::move(parts)}});
  }
  return {{"system", request.system},
          {"messages", std::move(messages)},
          {"options", OptionsToJson(request.options)}};
}

Json ResponseToJson(const ChatResponse& response) {
  Json json = {{"text", response.text},
               {"reasoning", response.reasoning},
               {"finish_reason", FinishReasonName(response.finish_reason)},
               {"raw_finish_reason", response.raw_finish_reason},
               {"refusal", response.refusal},
               {"usage", UsageToJson(response.usage)},
               {"cost_usd", nullptr},
               {"latency_ms", response.latency.count()},
               {"total_time_ms", response.total_time.count()},
               {"request_id", response.request_id},
               {"model", response.model},
               {"attempts", response.attempts},
               {"from_cache", response.from_cache}};
  if (response.cost_usd) json["cost_usd"] = *response.cost_usd;
  return json;
}

Result<ChatResponse> ResponseFromJson(const Json& json) {
  if (!json.is_object()) return Status::InvalidArgument("response is not an object");
  const Json* text = Member(json, "text");
  if (!text || !text->is_string()) return Status::InvalidArgument("response has no text");
  ChatResponse response;
  response.text = text->get<std::string>();
  response.reasoning = StringMember(json, "reasoning");
  response.finish_reason = FinishReasonFromName(StringMember(json, "finish_reason"));
  response.raw_finish_reason = StringMember(json, "raw_finish_reason");
  response.refusal = StringMember(json, "refusal");
  if (const Json* usage = ObjectMember(json, "usage")) response.usage = UsageFromJson(*usage);
  if (const Json* cost = Member(json, "cost_usd"); cost && cost->is_number()) {
    response.cost_usd = cost->get<double>();
  }
  response.latency = std::chrono::milliseconds(IntMember(json, "latency_ms"));
  response.total_time = std::chrono::milliseconds(IntMember(json, "total_time_ms"));
  response.request_id = StringMember(json, "request_id");
  response.model = StringMember(json, "model");
  response.attempts = static_cast<int>(IntMember(json, "attempts"));
  const Json* cached = Member(json, "from_cache");
  response.from_cache = cached && cached->is_boolean() && cached->get<bool>();
  return response;
}

Json StatusToJson(const Status& status) {
  return {{"code", CodeName(status.code())},
          {"kind", LlmErrorKindTag(LlmErrorKindOf(status))},
          {"message", status.message()}};
}

Status StatusFromJson(const Json& json) {
  std::string code = StringMember(json, "code");
  std::string message = StringMember(json, "message");
  if (code == "invalid_argument") return Status::InvalidArgument(message);
  if (code == "not_found") return Status::NotFound(message);
  if (code == "unavailable") return Status::Unavailable(message);
  if (code == "io_error") return Status::IoError(message);
  return Status::Internal(message.empty() ? "recorded error without a message" : message);
}

Result<std::unique_ptr<TranscriptWriter>> TranscriptWriter::Open(
    const std::filesystem::path& path) {
  std::error_code error;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), error);
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (!file) return Status::IoError("cannot open transcript " + path.string() + " for appending");
  return std::unique_ptr<TranscriptWriter>(new TranscriptWriter(path, file));
}

TranscriptWriter::~TranscriptWriter() { std::fclose(file_); }

Status TranscriptWriter::Append(const std::string& client, const Json& request,
                                const Result<ChatResponse>& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  Json line = {{"v", kTranscriptVersion},
               {"seq", next_seq_++},
               {"time", UtcNow()},
               {"client", client},
               {"request", request}};
  if (outcome.ok()) {
    line["response"] = ResponseToJson(*outcome);
  } else {
    line["error"] = StatusToJson(outcome.status());
  }
  std::string text = Redact(line.dump(-1, ' ', false, Json::error_handler_t::replace)) + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    return Status::IoError("cannot write to transcript " + path_.string());
  }
  return Status::Ok();
}

Result<std::vector<TranscriptEntry>> ReadTranscript(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot open transcript " + path.string());
  std::vector<TranscriptEntry> entries;
  std::string text;
  for (int line_number = 1; std::getline(in, text); ++line_number) {
    if (text.empty()) continue;
    std::string where = path.string() + ":" + std::to_string(line_number);
    std::string parse_error;
    std::optional<Json> line = ParseJson(text, &parse_error);
    if (!line) return Status::InvalidArgument(where + ": " + parse_error);
    Result<TranscriptEntry> entry = EntryFromJson(*line);
    if (!entry.ok()) return entry.status().WithContext(where);
    entries.push_back(std::move(entry).value());
  }
  return entries;
}

std::unique_ptr<LlmClient> NewRecordingClient(std::unique_ptr<LlmClient> inner,
                                              std::shared_ptr<TranscriptWriter> writer,
                                              std::function<void(std::string_view)> log) {
  return std::make_unique<RecordingClient>(std::move(inner), std::move(writer), std::move(log));
}

}  // namespace kforge::llm
