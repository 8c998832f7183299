// The exec: client: a coding-agent CLI (Claude Code, Codex, ...) or any program stands in for
// a model. The user's own CLI, with its own credentials, answers kforge's prompt; kforge never
// hands it kforge's API keys.
//
// One Complete() call:
//   1. A fresh work folder <workdir_root>/kforge-exec-XXXXXX holds
//        prompt.md    the request as Markdown: a note on where to answer, then "# System" and
//                     one "# User" / "# Assistant" section per message
//        prompt.json  the same request as JSON (the transcript's request format) with the
//                     names of the input files
//        input/       ChatRequest::files (the candidate the prompt repairs or optimizes) and
//                     the messages' images
//        out/         empty: the command writes its answer here
//   2. The command runs: its argv with {prompt} {prompt_json} {input} {out} {workdir} replaced,
//      in the work folder (or the configured cwd), with prompt.md on stdin when stdin_prompt is
//      set, under timeout_s (then it is killed with its process group), with the environment
//      ScrubEnvironment() leaves. Neither sandboxed nor cut off from the network: it is the
//      user's own trusted program. stdout (1 MiB) and stderr (256 KiB) are kept.
//   3. The answer, in this order of precedence:
//        - files in out/ (regular files directly inside, not hidden; at most 16, 1 MiB each):
//          each as a fenced code block whose info string names its language and file
//          ("```cpp candidate.cc"), candidate.* first, then the others by name, and last
//          answer.* verbatim (prose, or the analyst's JSON); stdout is then only logged;
//        - else stdout, trimmed;
//        - else (nothing written, nothing printed) the call fails with [bad_response].
//   4. The response: text = the answer; finish reason stop; usage zero (the CLI does not say);
//      cost unset (unknown); latency and total time = the measured wall time; reasoning = the
//      command's log (command, end, time, where the answer came from, stderr's tail, and
//      stdout's tail when files were the answer); model = "exec:NAME". The ledger records
//      the call with zero tokens and no cost.
// The work folder is removed after a successful call (kept with keep_workdir, and then logged)
// and kept after a failed one; the error message names it.
//
// Errors (MakeLlmError, tagged): [budget_exceeded] before running; [command_failed] when the
// work folder cannot be written, or the command cannot start, exits non-zero, is killed or
// floods its output (with stderr's tail and what to try); [timeout] past timeout_s;
// [bad_response] for no answer, an answer on stdout over 1 MiB, or too many or too large files.
//
// Thread-safety: Complete() is safe from many threads; each call has its own work folder, and
// max_concurrency calls run at once.
#ifndef KFORGE_LLM_EXEC_H_
#define KFORGE_LLM_EXEC_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/subprocess.h"
#include "kforge/llm/config.h"
#include "kforge/llm/llm.h"
#include "kforge/llm/pricing.h"
#include "kforge/llm/transport.h"

namespace kforge::llm {

using Environment = std::map<std::string, std::string>;

// What an exec client uses besides its settings.
struct ExecEnv {
  std::shared_ptr<ProcessRunner> runner;  // Runs the command (the limits turn isolation off).
  Clock* clock = nullptr;                 // Measures latency.
  std::shared_ptr<UsageLedger> ledger;
  std::function<void(std::string_view)> log;  // One line per call.
  Environment environment;                    // kforge's environment, before ScrubEnvironment.
  std::vector<std::string> key_env_names;     // ApiKeyEnvNames(config).
};

// REQUIRES: every ExecEnv field but environment and key_env_names is set; settings.command is
// not empty and passed CheckExecCommand.
std::unique_ptr<LlmClient> NewExecClient(ExecSettings settings, ExecEnv env);

// The environment the command gets: `environment` less every variable that could hand it
// kforge's keys: names starting with KFORGE_, names in `key_env_names`, names ending in
// _API_KEY, and any variable whose value holds a registered key (secrets.h). A name listed in
// `passthrough` is kept whatever it is.
Environment ScrubEnvironment(const Environment& environment,
                             const std::vector<std::string>& key_env_names,
                             const std::vector<std::string>& passthrough);

// This process's environment (environ).
Environment ProcessEnvironment();

// OK when every "{name}" (lower-case letters and '_') in the argv is a known placeholder:
// prompt, prompt_json, input, out, workdir. Else InvalidArgument naming it and the known ones.
Status CheckExecCommand(const std::vector<std::string>& command);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_EXEC_H_
