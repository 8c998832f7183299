// kforge's sub-commands. Each Add*Command registers one CLI11 sub-command whose callback
// stores its exit code in *exit_code. Exit codes (docs/cli.md):
//   0 success (eval: the verdict is `correct`), 1 a verdict other than correct,
//   2 bad usage or input (flags, problem file, candidate path), 3 environment or internal error.
#ifndef KFORGE_CLI_COMMANDS_H_
#define KFORGE_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loop/forge.h"

namespace kforge {

constexpr int kExitOk = 0;
constexpr int kExitVerdict = 1;
constexpr int kExitUsage = 2;
constexpr int kExitEnvironment = 3;

void AddEvalCommand(CLI::App& app, int* exit_code);
// --size name=value flags (eval, bench) -> sizes; a malformed item says what was expected.
Result<std::map<std::string, int64_t>> ParseSizes(const std::vector<std::string>& items);
// --precision (eval, optimize): empty -> unset (the problem's policy); else one policy name. A
// list or an unknown name fails, naming the valid policies.
Result<std::optional<PrecisionPolicy>> ParsePrecisionFlag(const std::string& value);
// The flags eval, optimize and bench share for the judge's trusted state: --rebaseline,
// --baseline-max-age and --no-trusted-cache (docs/evaluation.md, "Trusted state").
void AddTrustedStateFlags(CLI::App* cmd, EvalOptions* options);
void AddDoctorCommand(CLI::App& app, int* exit_code);
void AddProblemsCommand(CLI::App& app, int* exit_code);
// optimize, resume, runs, show.
void AddLoopCommands(CLI::App& app, int* exit_code);
// kforge bench: a suite of problems, judged or optimized, summarized.
void AddBenchCommand(CLI::App& app, int* exit_code);
// kforge report: a run or a bench file as one self-contained HTML page.
void AddReportCommand(CLI::App& app, int* exit_code);
// kforge serve: a live read-only page of the workspace's runs and benches.
void AddServeCommand(CLI::App& app, int* exit_code);
// One optimize run (the LLM from options.model, KFORGE_LLM or the config; offline otherwise).
Result<ForgeSummary> OptimizeOne(const ForgeOptions& options, const std::string& llm_config);

}  // namespace kforge

#endif  // KFORGE_CLI_COMMANDS_H_
