// The generation agent: builds its prompt from the template files and the run's state, and
// turns the model's answer into candidate files.
#ifndef KFORGE_AGENT_GENERATOR_H_
#define KFORGE_AGENT_GENERATOR_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/llm/config.h"
#include "kforge/llm/llm.h"
#include "kforge/problem.h"

namespace kforge {

struct GenerationContext {
  const Problem* problem = nullptr;
  std::string backend;
  std::string task;              // "first", "repair", "optimize"
  // The previous candidate as fenced blocks (main file, then program file, each labelled with
  // the backend's code language: FencedBlock), or empty.
  std::string previous;
  // The previous candidate's files, for clients that work on files (exec:); the text above
  // already holds them for the others.
  std::vector<llm::RequestFile> previous_files;
  std::string verdict_status;    // of the previous candidate
  std::string verdict_feedback;  // VerdictFeedback() of it
  std::string recommendation;    // the analyst's latest, as text
  std::string memory;            // approaches that failed, one per line
  // A working kernel for another backend, as TransferPromptText shows it (agent/transfer.h),
  // and that backend's name; empty: none.
  std::string transfer, transfer_backend;
  std::string instructions;      // the user's own instructions
  std::string context;           // the user's context files, concatenated with headers
  std::vector<std::string> deny; // code patterns the user forbids
  // kFull: the backend's ABI document (docs/abi-<backend>.md) and the whole problem file;
  // kCompact: the ABI's summary (the abi-summary section of prompts/backends/<backend>.md) and
  // the problem file without its description, comments and kforge-only tables. Both: the one
  // worked example.
  llm::PromptProfile profile = llm::PromptProfile::kFull;
};

// The request for the model. Fails when a template or the problem's files cannot be read.
Result<llm::ChatRequest> BuildGenerationRequest(const GenerationContext& ctx);

// What the model needs to know about a verdict: status, message, compiler errors trimmed to
// the first errors, first mismatches and error statistics, the runtime error or timeout.
std::string VerdictFeedback(const nlohmann::json& verdict);

// `code` in a fenced block whose info string is `language` ("cuda", "glsl"): how every prompt
// shows a kernel file, so that the model sees the labels its answer must use.
std::string FencedBlock(const std::string& language, const std::string& code);

// The request as JSON for the run store and artifacts (text parts only; images noted by size).
nlohmann::json RequestToJson(const llm::ChatRequest& request);

}  // namespace kforge

#endif  // KFORGE_AGENT_GENERATOR_H_
