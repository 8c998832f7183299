// Transcripts: every exchange with a model as one JSON line, for replay, audits and tests.
//
// Line format (version 1; docs/llm.md has the full field list):
//   {"v":1, "seq":0, "time":"2025-06-01T12:00:00Z", "client":"openai:gpt-5",
//    "request":{...RequestToJson...},
//    "response":{...ResponseToJson...}            on success, or
//    "error":{"code":"unavailable","kind":"rate_limited","message":"..."}   on failure}
// Images are recorded as {"mime_type", "bytes", "xxh128"}, not their data. Lines pass through
// Redact() before they are written, so no registered key can reach the file.
//
// Thread-safety: TranscriptWriter and RecordingClient are safe from many threads (lines are
// written whole, in completion order). The JSON functions are pure.
#ifndef KFORGE_LLM_TRANSCRIPT_H_
#define KFORGE_LLM_TRANSCRIPT_H_

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kforge/llm/llm.h"
#include "llm/json_util.h"

namespace kforge::llm {

// The request as kforge sees it, provider-independent, with images as hashes. Two requests
// with the same JSON are the same request (this is what replay compares and the cache hashes).
Json RequestToJson(const ChatRequest& request);
Json ResponseToJson(const ChatResponse& response);
// Reads ResponseToJson's output back. InvalidArgument when a field has the wrong type.
Result<ChatResponse> ResponseFromJson(const Json& json);
Json StatusToJson(const Status& status);
// Rebuilds the Status (same code and message, so the [kind] tag survives).
Status StatusFromJson(const Json& json);
// 32 hex digits of XXH3-128 over the bytes.
std::string Xxh128Hex(std::string_view bytes);

struct TranscriptEntry {
  int64_t seq = 0;
  std::string client;
  Json request;
  std::optional<ChatResponse> response;
  Status error;  // OK when response is set.
};

class TranscriptWriter {
 public:
  // Opens (creating folders) the file for appending. IoError if that fails.
  static Result<std::unique_ptr<TranscriptWriter>> Open(const std::filesystem::path& path);
  ~TranscriptWriter();

  // Writes one line and flushes it. IoError if the write fails.
  Status Append(const std::string& client, const Json& request,
                const Result<ChatResponse>& outcome);
  const std::filesystem::path& path() const { return path_; }

 private:
  TranscriptWriter(std::filesystem::path path, std::FILE* file) : path_(path), file_(file) {}
  std::mutex mu_;
  std::filesystem::path path_;
  std::FILE* file_;
  int64_t next_seq_ = 0;
};

// Reads every line. InvalidArgument naming the line on malformed input.
Result<std::vector<TranscriptEntry>> ReadTranscript(const std::filesystem::path& path);

// Wraps a client and records each exchange. A failed write is logged, not returned: the
// caller's answer matters more than the record.
std::unique_ptr<LlmClient> NewRecordingClient(std::unique_ptr<LlmClient> inner,
                                              std::shared_ptr<TranscriptWriter> writer,
                                              std::function<void(std::string_view)> log);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_TRANSCRIPT_H_
