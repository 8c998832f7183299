// `kforge llm ...`: sub-commands that talk to LLM providers.
//
//   kforge llm ping --model <m> [--config <file>]
//     Sends one tiny request and prints the reply, finish reason, latency, tokens and cost.
//     Exit codes: 0 ok, 2 usage or config error (bad model string, config file, missing key),
//     3 provider error (the request failed). The config comes from --config, else from the
//     KFORGE_LLM_CONFIG environment variable, else built-in defaults.
//
// Thread-safety: AddLlmCommands is called once while the CLI is built; RunLlmPing may run on
// any thread.
#ifndef KFORGE_CLI_LLM_COMMAND_H_
#define KFORGE_CLI_LLM_COMMAND_H_

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>

#include "kforge/llm/session.h"

namespace kforge {

// Registers `llm` and its sub-commands on `app`. A failing command throws
// CLI::RuntimeError(exit code), which main's usual `catch (const CLI::ParseError& e) { return
// app.exit(e); }` turns into the process exit code without printing anything more.
void AddLlmCommands(CLI::App& app);
// The same, but a command's exit code goes to *exit_code (as kforge's other commands do) instead
// of a thrown CLI::RuntimeError. REQUIRES: exit_code outlives app's parse.
void AddLlmCommands(CLI::App& app, int* exit_code);

struct LlmPingOptions {
  std::string model;   // Model string or [models] name; "" = the config's default_model.
  std::string config;  // Config file; "" = $KFORGE_LLM_CONFIG or none.
};

// Runs `kforge llm ping`; writes the report to `out` and errors to `err`. Returns the exit code
// (0, 2 or 3 as above). `deps` replaces the real transport/clock/log (tests).
int RunLlmPing(const LlmPingOptions& options, std::ostream& out, std::ostream& err,
               llm::LlmDeps deps = {});

}  // namespace kforge

#endif  // KFORGE_CLI_LLM_COMMAND_H_
