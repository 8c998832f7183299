// `kforge llm ping` (llm_command.h).
#include "cli/llm_command.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "kforge/llm/config.h"
#include "kforge/llm/llm.h"
#include "kforge/llm/secrets.h"
#include "llm/embedded_data.h"

namespace kforge {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitProvider = 3;
constexpr int kPingMaxOutputTokens = 64;

Result<llm::LlmConfig> LoadConfig(const std::string& flag) {
  std::string path = flag;
  if (path.empty()) {
    const char* from_env = std::getenv("KFORGE_LLM_CONFIG");
    if (from_env) path = from_env;
  }
  if (path.empty()) return llm::LlmConfig();
  return llm::LoadLlmConfig(path);
}

llm::ChatRequest PingRequest() {
  std::string prompt = llm::kPingPrompt;
  while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == '\r')) prompt.pop_back();
  llm::ChatRequest request;
  request.messages.push_back(llm::Message::User(prompt));
  request.options.max_output_tokens = kPingMaxOutputTokens;
  return request;
}

std::string Money(double usd) {
  char text[32];
  std::snprintf(text, sizeof text, "$%.6f", usd);
  return text;
}

// Writes the report; a key echoed by the server in any field is redacted.
void PrintReport(const std::string& client, const llm::ChatResponse& response,
                 std::ostream& final_out) {
  std::ostringstream out;
  std::string reply = response.text;
  for (char& c : reply) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  out << "model      " << client;
  if (!response.model.empty()) out << " (answered by " << response.model << ")";
  out << "\nreply      " << (reply.empty() ? "(empty)" : reply) << "\n";
  out << "finish     " << llm::FinishReasonName(response.finish_reason) << "\n";
  out << "latency    " << response.latency.count() << " ms (" << response.attempts
      << (response.attempts == 1 ? " attempt" : " attempts") << ", " << response.total_time.count()
      << " ms in all)\n";
  const llm::Usage& usage = response.usage;
  out << "tokens     " << usage.input_tokens << " in (" << usage.cached_input_tokens << " cached), "
      << usage.output_tokens << " out (" << usage.reasoning_tokens << " reasoning)\n";
  out << "cost       "
      << (response.cost_usd ? Money(*response.cost_usd)
                            : "unknown (the price table has no entry for this model; see "
                              "docs/llm.md)")
      << "\n";
  out << "request id " << (response.request_id.empty() ? "(none)" : response.request_id) << "\n";
  final_out << llm::Redact(out.str());
}

}  // namespace

int RunLlmPing(const LlmPingOptions& options, std::ostream& out, std::ostream& err,
               llm::LlmDeps deps) {
  Result<llm::LlmConfig> config = LoadConfig(options.config);
  if (!config.ok()) {
    err << "kforge llm ping: " << config.status().message() << "\n";
    return kExitUsage;
  }
  Result<std::unique_ptr<llm::LlmSession>> session =
      llm::LlmSession::Create(*config, std::move(deps));
  if (!session.ok()) {
    err << "kforge llm ping: " << session.status().message() << "\n";
    return kExitUsage;
  }
  Result<std::unique_ptr<llm::LlmClient>> client = (*session)->NewClient(options.model);
  if (!client.ok()) {
    err << "kforge llm ping: " << client.status().message() << "\n";
    return kExitUsage;
  }
  Result<llm::ChatResponse> response = (*client)->Complete(PingRequest());
  if (!response.ok()) {
    err << "kforge llm ping: " << response.status().message() << "\n";
    return kExitProvider;
  }
  PrintReport((*client)->Describe(), *response, out);
  return kExitOk;
}

void AddLlmCommands(CLI::App& app) { AddLlmCommands(app, nullptr); }

void AddLlmCommands(CLI::App& app, int* exit_code) {
  CLI::App* llm = app.add_subcommand("llm", "Talk to LLM providers");
  llm->require_subcommand(1);
  auto options = std::make_shared<LlmPingOptions>();
  CLI::App* ping = llm->add_subcommand(
      "ping", "Send one tiny request to a model; print latency, tokens and cost");
  ping->add_option("--model,-m", options->model,
                   "Model: provider:model (openai:gpt-5, anthropic:claude-opus-4-6, "
                   "gemini:gemini-2.5-pro, openai-compat:<model>@<url>, ...) or a config name")
      ->required();
  ping->add_option("--config", options->config,
                   "LLM config file (TOML); default $KFORGE_LLM_CONFIG");
  ping->callback([options, exit_code] {
    int code = RunLlmPing(*options, std::cout, std::cerr);
    if (exit_code) {
      *exit_code = code;
    } else if (code != kExitOk) {
      throw CLI::RuntimeError(code);
    }
  });
}

}  // namespace kforge
