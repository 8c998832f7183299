// Choosing a model: model strings, the built-in provider presets, and the TOML config file.
//
// A model is named by one string:
//   "openai:gpt-5"                          provider preset + model
//   "anthropic:claude-opus-4-6"
//   "gemini:gemini-2.5-pro"
//   "ollama:llama3.2:3b"                    local preset (default URL), model names may hold ':'
//   "openai-compat:Qwen/Qwen3-8B@http://gpu-box:8000/v1"   any OpenAI-compatible server
//   "vllm:my-model@http://10.0.0.5:8000/v1" a preset with its URL replaced
//   "replay:runs/llm.jsonl"                 serve a recorded transcript back
//   "local"                                 the model scripts/local-llm serves: the same as
//                                           "local:qwen2.5-coder-1.5b" (http://127.0.0.1:8089/v1)
//   "local:qwen2.5-coder-1.5b@http://127.0.0.1:9000/v1"   that server on another port
//   "local-qwen"                            a [models.local-qwen] entry of the config file
//   "exec:claude"                           a coding-agent CLI: the [exec.claude] command
//   "exec:/path/to/script"                  a program run as <path> {prompt} {out} (exec.h)
// The config file format and every key are documented in docs/llm.md.
//
// Thread-safety: plain values and pure functions.
#ifndef KFORGE_LLM_CONFIG_H_
#define KFORGE_LLM_CONFIG_H_

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/llm/llm.h"
#include "kforge/status.h"

namespace kforge::llm {

enum class WireFormat { kOpenAi, kAnthropic, kGemini, kReplay };

// How much of kforge's reference material a generation prompt carries (docs/loop.md, "Prompt
// size"): kFull, the backend's whole ABI document and its worked example; kCompact, a few lines of
// ABI summary and the same one short example, for small models and small context windows.
enum class PromptProfile { kFull, kCompact };
// "full" -> kFull, "compact" -> kCompact; InvalidArgument naming both for anything else.
Result<PromptProfile> ParsePromptProfile(std::string_view word);
std::string_view PromptProfileName(PromptProfile profile);

// Everything needed to talk to one model at one endpoint.
struct ProviderSettings {
  std::string provider;  // Preset name: "openai", "anthropic", "gemini", "vllm", "replay", ...
  WireFormat wire = WireFormat::kOpenAi;
  std::string model;           // Replay: unused.
  std::string base_url;        // e.g. "https://api.openai.com/v1". Replay: the transcript path.
  std::string api_key_env;     // Environment variable holding the key ("" = none).
  std::string api_key_file;    // Key file (owner-only permissions); wins over api_key_env.
  bool key_required = true;    // Local servers (vllm, ollama, ...) work without a key.
  std::optional<bool> vision;  // Set by config; else the price table's entry; else...
  bool vision_default = true;  // ...the preset's default.
  int max_concurrency = 4;     // Requests in flight per provider endpoint.
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds timeout{600000};  // Per attempt, whole response.
  // Streaming (docs/llm.md, "Streaming"): answers arrive as server-sent events, so a long
  // answer shows its progress, a server that dies mid-answer is noticed after idle_timeout of
  // silence, and an answer that repeats itself is stopped (stop_on_repetition).
  bool stream = true;
  std::chrono::milliseconds idle_timeout{60000};  // Zero: no idle limit.
  bool stop_on_repetition = true;
  // OpenAI family only: which field carries max_output_tokens ("max_completion_tokens" for
  // api.openai.com, "max_tokens" for compatible servers) and the system prompt's role
  // ("system", or "developer" for newer OpenAI models).
  std::string max_tokens_field = "max_tokens";
  std::string system_role = "system";
  // Anthropic requires max_tokens; this is sent when the request leaves it unset.
  int default_max_output_tokens = 4096;
  // Defaults for options the request leaves unset (model entries of the config may set them).
  std::optional<double> temperature;
  std::optional<int> max_output_tokens;
  std::optional<int64_t> seed;
  ReasoningEffort reasoning_effort = ReasoningEffort::kUnset;
  // The generation prompt's profile for this model (the `local` preset: kCompact).
  PromptProfile prompt_profile = PromptProfile::kFull;
  // The server's context window in tokens (prompt and answer together), when known; kforge
  // keeps its prompts inside it (docs/loop.md, "Prompt size"). Unset: nothing is checked. The
  // `local` preset: 16384, scripts/local-llm's default KFORGE_LLM_CTX.
  std::optional<int> context_window;

  // "openai:gpt-5"; "openai-compat:m@http://host/v1" for a non-default URL; "replay:<path>".
  std::string Name() const;
};

// Parses "provider:model[@url]" or "replay:<path>" against the built-in presets.
// On failure returns InvalidArgument tagged [config] listing the known providers.
Result<ProviderSettings> ParseModelSpec(std::string_view spec);
// The names of the built-in presets, in table order.
std::vector<std::string> ProviderPresetNames();

struct RetryPolicy {
  int max_attempts = 4;  // Including the first one.
  std::chrono::milliseconds initial_backoff{1000};
  double backoff_multiplier = 2.0;
  std::chrono::milliseconds max_backoff{30000};
  double jitter = 0.5;  // Each backoff wait is drawn uniformly from [w * (1 - jitter), w].
  // A Retry-After longer than this ends the call at once (with the wait in the message).
  std::chrono::milliseconds max_retry_after{120000};
};

// Optional settings from a [providers.X] or [models.X] table; unset fields change nothing.
struct SettingsOverride {
  std::optional<std::string> provider;  // [models.X] only: which preset to start from.
  std::optional<std::string> model, base_url, api_key_env, api_key_file;
  std::optional<std::string> max_tokens_field, system_role;
  std::optional<bool> vision;
  std::optional<int> max_concurrency, default_max_output_tokens, max_output_tokens;
  std::optional<std::chrono::milliseconds> connect_timeout, timeout, idle_timeout;
  std::optional<bool> stream, stop_on_repetition;
  std::optional<double> temperature;
  std::optional<int64_t> seed;
  std::optional<ReasoningEffort> reasoning_effort;
  std::optional<PromptProfile> prompt_profile;
  std::optional<int> context_window;

  void ApplyTo(ProviderSettings* settings) const;
};

// Sampling settings of one agent role ([roles.generator], [roles.analyst] in the config; the
// optimize command's --generator-* / --analyst-* flags win over them). Unset fields leave the
// model's settings (and then the provider's defaults) in charge.
struct RoleSettings {
  std::optional<double> temperature;
  std::optional<int> max_output_tokens;
  std::optional<int64_t> seed;
};

// A command that stands in for a model ("exec:NAME", [exec.NAME] in the config; exec.h says
// what kforge does with it and docs/llm.md, "Coding-agent CLIs (exec:)", how to set one up).
struct ExecSettings {
  std::string name;  // "exec:claude", "exec:/path/to/script": how runs and the store name it.
  // argv; placeholders {prompt} {prompt_json} {input} {out} {workdir} are replaced per call.
  std::vector<std::string> command;
  std::chrono::milliseconds timeout{1800000};
  // Where the command runs: "workdir" (the call's fresh work folder), "current" (kforge's own
  // working directory) or a folder (relative paths: against the config's folder).
  std::string cwd = "workdir";
  std::filesystem::path workdir_root;  // Where work folders are made; empty: the temp folder.
  bool keep_workdir = false;           // Failed calls always keep theirs.
  bool stdin_prompt = false;           // Also send prompt.md on the command's stdin.
  // Variables passed through although kforge would withhold them (API keys, KFORGE_*).
  std::vector<std::string> env_passthrough;
  int max_concurrency = 4;  // Calls of this command running at once.
};

struct LlmConfig {
  std::filesystem::path base_dir;  // Relative paths in the file are resolved against this.
  std::string default_model;       // Used when no --model is given.
  std::map<std::string, SettingsOverride> providers;  // [providers.<preset>]
  std::map<std::string, SettingsOverride> models;     // [models.<name>]
  std::map<std::string, RoleSettings> roles;          // [roles.generator], [roles.analyst]
  std::map<std::string, ExecSettings> exec;           // [exec.<name>]
  RetryPolicy retry;
  std::string prices_file;           // Empty: the built-in table (src/llm/prices.toml).
  std::string transcript;            // Empty: no recording. Else a JSON Lines file, appended to.
  std::string cache_dir;             // Empty: no response cache.
  std::optional<double> budget_usd;  // Calls fail with [budget_exceeded] once spent.
};

// Parses config TOML. Unknown keys, wrong types and keys in the file ("api_key") are errors:
// InvalidArgument tagged [config] naming the key and the file.
Result<LlmConfig> ParseLlmConfig(std::string_view toml_text, std::string_view origin,
                                 const std::filesystem::path& base_dir);
// Reads and parses a config file; relative paths in it are relative to its folder.
Result<LlmConfig> LoadLlmConfig(const std::filesystem::path& path);

// Turns a model string or a [models] name into settings: preset, then [providers.<preset>]
// overrides, then the model entry (or the "@url" of the string). An empty string means the
// config's default_model. On failure returns InvalidArgument tagged [config].
Result<ProviderSettings> ResolveModel(std::string_view model, const LlmConfig& config);

// True for "exec:..." model strings, which ResolveExec (not ResolveModel) turns into settings.
bool IsExecModel(std::string_view model);
// "exec:NAME": the [exec.NAME] entry; "exec:<path>" (a path with a '/') when no entry has that
// name: <path> {prompt} {out}, the other settings at their defaults. On failure (no such entry,
// the path is not an executable file) returns InvalidArgument tagged [config].
Result<ExecSettings> ResolveExec(std::string_view model, const LlmConfig& config);
// The environment variables that hold API keys for kforge: every preset's, GOOGLE_API_KEY, and
// each api_key_env of the config's [providers] and [models]. exec: withholds them.
std::vector<std::string> ApiKeyEnvNames(const LlmConfig& config);

// The model scripts/local-llm serves (see docs/llm.md, "A local model").
inline constexpr std::string_view kLocalModelName = "qwen2.5-coder-1.5b";
inline constexpr std::string_view kLocalModelUrl = "http://127.0.0.1:8089/v1";
// Its context window in tokens: scripts/local-llm's default KFORGE_LLM_CTX.
inline constexpr int kLocalModelContext = 16384;

}  // namespace kforge::llm

#endif  // KFORGE_LLM_CONFIG_H_
