// Model strings, provider presets and the config file (config.h).
#include "kforge/llm/config.h"

#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>

#include "llm/exec.h"

namespace kforge::llm {

namespace {

struct Preset {
  std::string_view name;
  WireFormat wire;
  std::string_view base_url;
  std::string_view key_env;
  bool key_required;
  bool vision;
  std::string_view max_tokens_field;
  // Small models: a compact generation prompt inside a known context window (0 = unknown).
  int context_window = 0;
  PromptProfile prompt_profile = PromptProfile::kFull;
};

// The one list of providers kforge knows by name. Anything else OpenAI-compatible is
// "openai-compat:<model>@<url>".
constexpr std::array<Preset, 13> kPresets = {{
    {"openai", WireFormat::kOpenAi, "https://api.openai.com/v1", "OPENAI_API_KEY", true, true,
     "max_completion_tokens"},
    {"anthropic", WireFormat::kAnthropic, "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY", true,
     true, "max_tokens"},
    {"gemini", WireFormat::kGemini, "https://generativelanguage.googleapis.com/v1beta",
     "GEMINI_API_KEY", true, true, "max_tokens"},
    {"openai-compat", WireFormat::kOpenAi, "", "OPENAI_COMPAT_API_KEY", false, false, "max_tokens"},
    {"vllm", WireFormat::kOpenAi, "http://localhost:8000/v1", "VLLM_API_KEY", false, false,
     "max_tokens"},
    {"sglang", WireFormat::kOpenAi, "http://localhost:30000/v1", "SGLANG_API_KEY", false, false,
     "max_tokens"},
    {"ollama", WireFormat::kOpenAi, "http://localhost:11434/v1", "OLLAMA_API_KEY", false, false,
     "max_tokens"},
    {"llamacpp", WireFormat::kOpenAi, "http://localhost:8080/v1", "LLAMACPP_API_KEY", false, false,
     "max_tokens"},
    {"openrouter", WireFormat::kOpenAi, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", true,
     false, "max_tokens"},
    {"deepseek", WireFormat::kOpenAi, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", true,
     false, "max_tokens"},
    {"together", WireFormat::kOpenAi, "https://api.together.xyz/v1", "TOGETHER_API_KEY", true,
     false, "max_tokens"},
    // scripts/local-llm's llama-server; "local" alone means "local:qwen2.5-coder-1.5b".
    // Its context is scripts/local-llm's KFORGE_LLM_CTX default.
    {"local", WireFormat::kOpenAi, kLocalModelUrl, "KFORGE_LOCAL_LLM_API_KEY", false, false,
     "max_tokens", kLocalModelContext, PromptProfile::kCompact},
    {"replay", WireFormat::kReplay, "", "", false, true, "max_tokens"},
}};

Status ConfigError(std::string_view origin, std::string detail) {
  return MakeLlmError(LlmErrorKind::kConfig, origin, detail);
}

const Preset* FindPreset(std::string_view name) {
  for (const Preset& preset : kPresets) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

std::string PresetList() {
  std::string list;
  for (const Preset& preset : kPresets)
    list += (list.empty() ? "" : ", ") + std::string(preset.name);
  return list;
}

ProviderSettings FromPreset(const Preset& preset) {
  ProviderSettings settings;
  settings.provider = std::string(preset.name);
  settings.wire = preset.wire;
  settings.base_url = std::string(preset.base_url);
  settings.api_key_env = std::string(preset.key_env);
  settings.key_required = preset.key_required;
  settings.vision_default = preset.vision;
  settings.max_tokens_field = std::string(preset.max_tokens_field);
  settings.prompt_profile = preset.prompt_profile;
  if (preset.context_window > 0) settings.context_window = preset.context_window;
  return settings;
}

Result<ProviderSettings> PresetSettings(std::string_view provider, std::string_view origin) {
  const Preset* preset = FindPreset(provider);
  if (!preset) {
    return ConfigError(origin, "unknown provider '" + std::string(provider) +
                                   "'; known providers: " + PresetList());
  }
  return FromPreset(*preset);
}

struct SpecParts {
  std::string provider, model, url;
};

// "provider:model[@http(s)://url]". Model names may contain ':' (Ollama tags) and '/'.
// "local" alone is scripts/local-llm's model at its default URL.
Result<SpecParts> SplitSpec(std::string_view spec) {
  if (spec == "local") return SpecParts{"local", std::string(kLocalModelName), ""};
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return ConfigError("model", "'" + std::string(spec) +
                                    "' is not a model string: use <provider>:<model> (e.g. "
                                    "openai:gpt-5) or a [models] name from the config");
  }
  SpecParts parts{std::string(spec.substr(0, colon)), std::string(spec.substr(colon + 1)), ""};
  size_t at = parts.model.rfind('@');
  if (parts.provider != "replay" && at != std::string::npos) {
    std::string url = parts.model.substr(at + 1);
    if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
      parts.url = url;
      parts.model.resize(at);
    }
  }
  if (parts.model.empty()) {
    return ConfigError("model", "'" + std::string(spec) + "' names no model after the ':'");
  }
  return parts;
}

Status Validate(const ProviderSettings& settings, std::string_view origin) {
  if (settings.base_url.empty()) {
    return ConfigError(origin, settings.provider + " needs a URL: write " + settings.provider +
                                   ":<model>@http://host:port/v1 or set base_url");
  }
  if (settings.wire != WireFormat::kReplay && settings.model.empty()) {
    return ConfigError(origin, "no model name for provider " + settings.provider);
  }
  if (settings.max_concurrency < 1) {
    return ConfigError(origin, "max_concurrency must be at least 1");
  }
  return Status::Ok();
}

Result<ProviderSettings> SettingsFromParts(const SpecParts& parts) {
  KF_ASSIGN_OR_RETURN(ProviderSettings settings, PresetSettings(parts.provider, "model"));
  if (settings.wire == WireFormat::kReplay) {
    settings.base_url = parts.model;
  } else {
    settings.model = parts.model;
    if (!parts.url.empty()) settings.base_url = parts.url;
  }
  return settings;
}

}  // namespace

std::string ProviderSettings::Name() const {
  if (wire == WireFormat::kReplay) return "replay:" + base_url;
  std::string name = provider + ":" + model;
  const Preset* preset = FindPreset(provider);
  if (!preset || preset->base_url != base_url) name += "@" + base_url;
  return name;
}

std::vector<std::string> ProviderPresetNames() {
  std::vector<std::string> names;
  for (const Preset& preset : kPresets) names.emplace_back(preset.name);
  return names;
}

Result<ProviderSettings> ParseModelSpec(std::string_view spec) {
  KF_ASSIGN_OR_RETURN(SpecParts parts, SplitSpec(spec));
  KF_ASSIGN_OR_RETURN(ProviderSettings settings, SettingsFromParts(parts));
  KF_RETURN_IF_ERROR(Validate(settings, "model"));
  return settings;
}

void SettingsOverride::ApplyTo(ProviderSettings* s) const {
  if (model) s->model = *model;
  if (base_url) s->base_url = *base_url;
  if (api_key_env) s->api_key_env = *api_key_env;
  if (api_key_file) s->api_key_file = *api_key_file;
  if (max_tokens_field) s->max_tokens_field = *max_tokens_field;
  if (system_role) s->system_role = *system_role;
  if (vision) s->vision = *vision;
  if (max_concurrency) s->max_concurrency = *max_concurrency;
  if (default_max_output_tokens) s->default_max_output_tokens = *default_max_output_tokens;
  if (max_output_tokens) s->max_output_tokens = *max_output_tokens;
  if (connect_timeout) s->connect_timeout = *connect_timeout;
  if (timeout) s->timeout = *timeout;
  if (idle_timeout) s->idle_timeout = *idle_timeout;
  if (stream) s->stream = *stream;
  if (stop_on_repetition) s->stop_on_repetition = *stop_on_repetition;
  if (temperature) s->temperature = *temperature;
  if (seed) s->seed = *seed;
  if (reasoning_effort) s->reasoning_effort = *reasoning_effort;
  if (prompt_profile) s->prompt_profile = *prompt_profile;
  if (context_window) s->context_window = *context_window;
}

Result<PromptProfile> ParsePromptProfile(std::string_view word) {
  if (word == "full") return PromptProfile::kFull;
  if (word == "compact") return PromptProfile::kCompact;
  return Status::InvalidArgument("unknown prompt profile '" + std::string(word) +
                                 "'; use \"full\" or \"compact\"");
}

std::string_view PromptProfileName(PromptProfile profile) {
  return profile == PromptProfile::kCompact ? "compact" : "full";
}

// ---- Config file ------------------------------------------------------------------------------

namespace {

using std::chrono::milliseconds;

// Reads typed keys from one TOML table, naming "<origin>: <path>.<key>" in errors, and
// rejects keys it was not asked about.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string path, std::string_view origin)
      : table_(table), path_(std::move(path)), origin_(origin) {}

  template <typename T>
  Status Read(std::string_view key, std::optional<T>* out) {
    seen_.emplace_back(key);
    const toml::node* node = table_.get(key);
    if (!node) return Status::Ok();
    std::optional<T> value = node->value<T>();
    if (!value)
      return Error(key, std::string("has the wrong type (expected ") + TypeName<T>() + ")");
    *out = std::move(value);
    return Status::Ok();
  }

  // An array of strings.
  Status ReadStrings(std::string_view key, std::optional<std::vector<std::string>>* out) {
    seen_.emplace_back(key);
    const toml::node* node = table_.get(key);
    if (!node) return Status::Ok();
    const toml::array* array = node->as_array();
    std::vector<std::string> values;
    for (size_t i = 0; array && i < array->size(); ++i) {
      std::optional<std::string> value = array->get(i)->value<std::string>();
      if (!value) break;
      values.push_back(std::move(*value));
    }
    if (!array || values.size() != array->size()) {
      return Error(key, "has the wrong type (expected an array of strings)");
    }
    *out = std::move(values);
    return Status::Ok();
  }

  Status ReadSeconds(std::string_view key, std::optional<milliseconds>* out) {
    std::optional<double> seconds;
    KF_RETURN_IF_ERROR(Read(key, &seconds));
    if (!seconds) return Status::Ok();
    if (*seconds <= 0) return Error(key, "must be positive");
    *out = milliseconds(static_cast<int64_t>(*seconds * 1000));
    return Status::Ok();
  }

  Status ReadPath(std::string_view key, const std::filesystem::path& base,
                  std::optional<std::string>* out) {
    KF_RETURN_IF_ERROR(Read(key, out));
    if (*out && !(*out)->empty() && (*out)->rfind("~/", 0) != 0) {
      *out = (base / **out).lexically_normal().string();
    }
    return Status::Ok();
  }

  // Call last: errors on any key not read, with a special message for keys in the file.
  Status CheckNoOtherKeys() const {
    for (const auto& [key, node] : table_) {
      std::string_view name = key.str();
      if (name == "api_key" || name == "key") {
        return Error(name,
                     "is not allowed: keys never go in a config file; use api_key_env "
                     "(an environment variable) or api_key_file (a chmod 600 file)");
      }
      if (std::find(seen_.begin(), seen_.end(), name) == seen_.end()) {
        return Error(name, "is not a known setting (see docs/llm.md)");
      }
    }
    return Status::Ok();
  }

  Status Error(std::string_view key, std::string_view what) const {
    std::string name = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    return ConfigError(origin_, name + " " + std::string(what));
  }

  void Skip(std::string_view key) { seen_.emplace_back(key); }

 private:
  template <typename T>
  static const char* TypeName() {
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    if constexpr (std::is_same_v<T, int64_t>) return "an integer";
    return "a number";
  }

  const toml::table& table_;
  std::string path_;
  std::string origin_;
  std::vector<std::string> seen_;
};

Status ReadInt(TableReader& reader, std::string_view key, std::optional<int>* out) {
  std::optional<int64_t> value;
  KF_RETURN_IF_ERROR(reader.Read(key, &value));
  if (value) *out = static_cast<int>(*value);
  return Status::Ok();
}

Status ReadEffort(TableReader& reader, std::optional<ReasoningEffort>* out) {
  std::optional<std::string> word;
  KF_RETURN_IF_ERROR(reader.Read("reasoning_effort", &word));
  if (!word) return Status::Ok();
  Result<ReasoningEffort> effort = ParseReasoningEffort(*word);
  if (!effort.ok()) return reader.Error("reasoning_effort", effort.status().message());
  *out = *effort;
  return Status::Ok();
}

Status ReadProfile(TableReader& reader, std::optional<PromptProfile>* out) {
  std::optional<std::string> word;
  KF_RETURN_IF_ERROR(reader.Read("prompt_profile", &word));
  if (!word) return Status::Ok();
  Result<PromptProfile> profile = ParsePromptProfile(*word);
  if (!profile.ok()) return reader.Error("prompt_profile", profile.status().message());
  *out = *profile;
  return Status::Ok();
}

Result<SettingsOverride> ReadOverride(const toml::table& table, const std::string& path,
                                      std::string_view origin, const std::filesystem::path& base,
                                      bool is_model) {
  TableReader reader(table, path, origin);
  SettingsOverride o;
  if (is_model) KF_RETURN_IF_ERROR(reader.Read("provider", &o.provider));
  KF_RETURN_IF_ERROR(reader.Read("model", &o.model));
  KF_RETURN_IF_ERROR(reader.Read("base_url", &o.base_url));
  KF_RETURN_IF_ERROR(reader.Read("api_key_env", &o.api_key_env));
  KF_RETURN_IF_ERROR(reader.ReadPath("api_key_file", base, &o.api_key_file));
  KF_RETURN_IF_ERROR(reader.Read("max_tokens_field", &o.max_tokens_field));
  KF_RETURN_IF_ERROR(reader.Read("system_role", &o.system_role));
  KF_RETURN_IF_ERROR(reader.Read("vision", &o.vision));
  KF_RETURN_IF_ERROR(ReadInt(reader, "max_concurrency", &o.max_concurrency));
  KF_RETURN_IF_ERROR(ReadInt(reader, "default_max_output_tokens", &o.default_max_output_tokens));
  KF_RETURN_IF_ERROR(ReadInt(reader, "max_output_tokens", &o.max_output_tokens));
  KF_RETURN_IF_ERROR(reader.ReadSeconds("connect_timeout_s", &o.connect_timeout));
  KF_RETURN_IF_ERROR(reader.ReadSeconds("timeout_s", &o.timeout));
  KF_RETURN_IF_ERROR(reader.ReadSeconds("idle_timeout_s", &o.idle_timeout));
  KF_RETURN_IF_ERROR(reader.Read("stream", &o.stream));
  KF_RETURN_IF_ERROR(reader.Read("stop_on_repetition", &o.stop_on_repetition));
  KF_RETURN_IF_ERROR(reader.Read("temperature", &o.temperature));
  KF_RETURN_IF_ERROR(reader.Read("seed", &o.seed));
  KF_RETURN_IF_ERROR(ReadEffort(reader, &o.reasoning_effort));
  KF_RETURN_IF_ERROR(ReadProfile(reader, &o.prompt_profile));
  KF_RETURN_IF_ERROR(ReadInt(reader, "context_window", &o.context_window));
  KF_RETURN_IF_ERROR(reader.CheckNoOtherKeys());
  if (o.max_concurrency && *o.max_concurrency < 1) {
    return reader.Error("max_concurrency", "must be at least 1");
  }
  if (o.max_output_tokens && *o.max_output_tokens < 1) {
    return reader.Error("max_output_tokens", "must be at least 1");
  }
  if (o.context_window && *o.context_window < 256) {
    return reader.Error("context_window", "must be at least 256 (tokens)");
  }
  return o;
}

// [roles.generator] / [roles.analyst]: temperature, max_output_tokens, seed.
Status ReadRoles(const toml::node* node, std::string_view origin,
                 std::map<std::string, RoleSettings>* out) {
  if (!node) return Status::Ok();
  const toml::table* table = node->as_table();
  if (!table) return ConfigError(origin, "roles must be a table");
  for (const auto& [key, value] : *table) {
    std::string name(key.str());
    if (name != "generator" && name != "analyst") {
      return ConfigError(origin, "roles." + name + ": unknown role; known: generator, analyst");
    }
    const toml::table* entry = value.as_table();
    if (!entry) return ConfigError(origin, "roles." + name + " must be a table");
    TableReader reader(*entry, "roles." + name, origin);
    RoleSettings role;
    KF_RETURN_IF_ERROR(reader.Read("temperature", &role.temperature));
    KF_RETURN_IF_ERROR(ReadInt(reader, "max_output_tokens", &role.max_output_tokens));
    KF_RETURN_IF_ERROR(reader.Read("seed", &role.seed));
    KF_RETURN_IF_ERROR(reader.CheckNoOtherKeys());
    if (role.max_output_tokens && *role.max_output_tokens < 1) {
      return reader.Error("max_output_tokens", "must be at least 1");
    }
    if (role.temperature && *role.temperature < 0) {
      return reader.Error("temperature", "must not be negative");
    }
    (*out)[name] = role;
  }
  return Status::Ok();
}

Status ReadRetry(const toml::table& table, std::string_view origin, RetryPolicy* retry) {
  TableReader reader(table, "retry", origin);
  std::optional<int> attempts;
  std::optional<int64_t> initial_ms, max_ms;
  std::optional<double> multiplier, jitter, max_retry_after_s;
  KF_RETURN_IF_ERROR(ReadInt(reader, "max_attempts", &attempts));
  KF_RETURN_IF_ERROR(reader.Read("initial_backoff_ms", &initial_ms));
  KF_RETURN_IF_ERROR(reader.Read("max_backoff_ms", &max_ms));
  KF_RETURN_IF_ERROR(reader.Read("backoff_multiplier", &multiplier));
  KF_RETURN_IF_ERROR(reader.Read("jitter", &jitter));
  KF_RETURN_IF_ERROR(reader.Read("max_retry_after_s", &max_retry_after_s));
  KF_RETURN_IF_ERROR(reader.CheckNoOtherKeys());
  if (attempts && *attempts < 1) return reader.Error("max_attempts", "must be at least 1");
  if (jitter && (*jitter < 0 || *jitter > 1)) return reader.Error("jitter", "must be in [0, 1]");
  if (attempts) retry->max_attempts = *attempts;
  if (initial_ms) retry->initial_backoff = milliseconds(*initial_ms);
  if (max_ms) retry->max_backoff = milliseconds(*max_ms);
  if (multiplier) retry->backoff_multiplier = *multiplier;
  if (jitter) retry->jitter = *jitter;
  if (max_retry_after_s) {
    retry->max_retry_after = milliseconds(static_cast<int64_t>(*max_retry_after_s * 1000));
  }
  return Status::Ok();
}

Status ReadOverrides(const toml::node* node, std::string_view section, std::string_view origin,
                     const std::filesystem::path& base,
                     std::map<std::string, SettingsOverride>* out) {
  if (!node) return Status::Ok();
  const toml::table* table = node->as_table();
  if (!table) return ConfigError(origin, std::string(section) + " must be a table");
  for (const auto& [key, value] : *table) {
    std::string path = std::string(section) + "." + std::string(key.str());
    const toml::table* entry = value.as_table();
    if (!entry) return ConfigError(origin, path + " must be a table");
    KF_ASSIGN_OR_RETURN(SettingsOverride o,
                        ReadOverride(*entry, path, origin, base, section == "models"));
    (*out)[std::string(key.str())] = std::move(o);
  }
  return Status::Ok();
}

Status ReadTopLevel(const toml::table& root, std::string_view origin, LlmConfig* config) {
  TableReader reader(root, "", origin);
  std::optional<std::string> default_model, prices, transcript, cache_dir;
  std::optional<double> budget;
  KF_RETURN_IF_ERROR(reader.Read("default_model", &default_model));
  KF_RETURN_IF_ERROR(reader.ReadPath("prices", config->base_dir, &prices));
  KF_RETURN_IF_ERROR(reader.ReadPath("transcript", config->base_dir, &transcript));
  KF_RETURN_IF_ERROR(reader.ReadPath("cache_dir", config->base_dir, &cache_dir));
  KF_RETURN_IF_ERROR(reader.Read("budget_usd", &budget));
  reader.Skip("retry");
  reader.Skip("providers");
  reader.Skip("models");
  reader.Skip("roles");
  reader.Skip("exec");
  KF_RETURN_IF_ERROR(reader.CheckNoOtherKeys());
  config->default_model = default_model.value_or("");
  config->prices_file = prices.value_or("");
  config->transcript = transcript.value_or("");
  config->cache_dir = cache_dir.value_or("");
  config->budget_usd = budget;
  return Status::Ok();
}

// Applies the keys of one [exec.NAME] table to `settings` (which holds the defaults).
Status ReadExecKeys(TableReader& reader, const std::filesystem::path& base,
                    ExecSettings* settings) {
  std::optional<std::vector<std::string>> command, passthrough;
  std::optional<milliseconds> timeout;
  std::optional<std::string> cwd, root;
  std::optional<bool> keep, stdin_prompt;
  std::optional<int> concurrency;
  KF_RETURN_IF_ERROR(reader.ReadStrings("command", &command));
  KF_RETURN_IF_ERROR(reader.ReadSeconds("timeout_s", &timeout));
  KF_RETURN_IF_ERROR(reader.Read("cwd", &cwd));
  KF_RETURN_IF_ERROR(reader.ReadPath("workdir_root", base, &root));
  KF_RETURN_IF_ERROR(reader.Read("keep_workdir", &keep));
  KF_RETURN_IF_ERROR(reader.Read("stdin_prompt", &stdin_prompt));
  KF_RETURN_IF_ERROR(reader.ReadStrings("env_passthrough", &passthrough));
  KF_RETURN_IF_ERROR(ReadInt(reader, "max_concurrency", &concurrency));
  KF_RETURN_IF_ERROR(reader.CheckNoOtherKeys());
  if (!command || command->empty() || command->front().empty()) {
    return reader.Error("command",
                        "must be set to the program and its arguments, e.g. "
                        "[\"claude\", \"-p\"] (see docs/llm.md, \"Coding-agent CLIs\")");
  }
  if (Status placeholders = CheckExecCommand(*command); !placeholders.ok()) {
    return reader.Error("command", placeholders.message());
  }
  if (concurrency && *concurrency < 1) return reader.Error("max_concurrency", "must be at least 1");
  settings->command = *command;
  if (timeout) settings->timeout = *timeout;
  if (cwd && *cwd != "workdir" && *cwd != "current") {
    settings->cwd = (base / *cwd).lexically_normal().string();
  } else if (cwd) {
    settings->cwd = *cwd;
  }
  if (root) settings->workdir_root = *root;
  settings->keep_workdir = keep.value_or(false);
  settings->stdin_prompt = stdin_prompt.value_or(false);
  if (passthrough) settings->env_passthrough = *passthrough;
  if (concurrency) settings->max_concurrency = *concurrency;
  return Status::Ok();
}

// [exec.NAME]: a coding-agent CLI or script that stands in for a model.
Status ReadExec(const toml::node* node, std::string_view origin, const std::filesystem::path& base,
                std::map<std::string, ExecSettings>* out) {
  if (!node) return Status::Ok();
  const toml::table* table = node->as_table();
  if (!table) return ConfigError(origin, "exec must be a table");
  for (const auto& [key, value] : *table) {
    std::string name(key.str());
    const toml::table* entry = value.as_table();
    if (!entry) return ConfigError(origin, "exec." + name + " must be a table");
    TableReader reader(*entry, "exec." + name, origin);
    ExecSettings settings;
    settings.name = "exec:" + name;
    KF_RETURN_IF_ERROR(ReadExecKeys(reader, base, &settings));
    (*out)[name] = std::move(settings);
  }
  return Status::Ok();
}

Status ReadAll(const toml::table& root, std::string_view origin, LlmConfig* config) {
  KF_RETURN_IF_ERROR(ReadTopLevel(root, origin, config));
  if (const toml::node* retry = root.get("retry")) {
    if (!retry->as_table()) return ConfigError(origin, "retry must be a table");
    KF_RETURN_IF_ERROR(ReadRetry(*retry->as_table(), origin, &config->retry));
  }
  KF_RETURN_IF_ERROR(ReadRoles(root.get("roles"), origin, &config->roles));
  KF_RETURN_IF_ERROR(ReadExec(root.get("exec"), origin, config->base_dir, &config->exec));
  KF_RETURN_IF_ERROR(ReadOverrides(root.get("providers"), "providers", origin, config->base_dir,
                                   &config->providers));
  for (const auto& [name, o] : config->providers) {
    if (!FindPreset(name)) {
      return ConfigError(origin,
                         "providers." + name + ": unknown provider; known: " + PresetList());
    }
  }
  return ReadOverrides(root.get("models"), "models", origin, config->base_dir, &config->models);
}

Result<ProviderSettings> ResolveNamed(const std::string& name, const SettingsOverride& entry,
                                      const LlmConfig& config) {
  std::string origin = "models." + name;
  if (!entry.provider) return ConfigError(origin, "needs provider = \"<preset>\"");
  KF_ASSIGN_OR_RETURN(ProviderSettings settings, PresetSettings(*entry.provider, origin));
  if (auto it = config.providers.find(settings.provider); it != config.providers.end()) {
    it->second.ApplyTo(&settings);
  }
  entry.ApplyTo(&settings);
  KF_RETURN_IF_ERROR(Validate(settings, origin));
  return settings;
}

// "exec:<path>" without an [exec] entry: the program itself, given the prompt and the answer
// folder.
Result<ExecSettings> ExecFromPath(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || access(path.c_str(), X_OK) != 0) {
    return ConfigError("model", "exec:" + path +
                                    ": no such executable file; name an [exec.<name>] entry of "
                                    "the config or an executable program (chmod +x)");
  }
  ExecSettings settings;
  settings.name = "exec:" + path;
  settings.command = {path, "{prompt}", "{out}"};
  return settings;
}

}  // namespace

bool IsExecModel(std::string_view model) { return model.rfind("exec:", 0) == 0; }

Result<ExecSettings> ResolveExec(std::string_view model, const LlmConfig& config) {
  std::string name(model.substr(std::min<size_t>(model.size(), 5)));
  if (auto it = config.exec.find(name); it != config.exec.end()) return it->second;
  if (name.find('/') != std::string::npos) return ExecFromPath(name);
  std::string known;
  for (const auto& [entry, settings] : config.exec) known += (known.empty() ? "" : ", ") + entry;
  std::string known_part = known.empty() ? "none configured" : "configured: " + known;
  return ConfigError(
      "model", "exec:" + name + " is neither an [exec." + name +
                   "] entry of the LLM config (KFORGE_LLM_CONFIG or the command's config flag; " +
                   known_part + ") nor a path to a program (one with a '/')");
}

std::vector<std::string> ApiKeyEnvNames(const LlmConfig& config) {
  std::vector<std::string> names = {"GOOGLE_API_KEY"};
  for (const Preset& preset : kPresets) {
    if (!preset.key_env.empty()) names.emplace_back(preset.key_env);
  }
  for (const auto* section : {&config.providers, &config.models}) {
    for (const auto& [name, o] : *section) {
      if (o.api_key_env && !o.api_key_env->empty()) names.push_back(*o.api_key_env);
    }
  }
  return names;
}

Result<LlmConfig> ParseLlmConfig(std::string_view toml_text, std::string_view origin,
                                 const std::filesystem::path& base_dir) {
  LlmConfig config;
  config.base_dir = base_dir;
  toml::table root;
  try {
    root = toml::parse(toml_text, std::string_view(origin));
  } catch (const toml::parse_error& e) {
    std::ostringstream where;
    where << "line " << e.source().begin.line << ", column " << e.source().begin.column;
    return ConfigError(origin,
                       "TOML syntax error at " + where.str() + ": " + std::string(e.description()));
  }
  KF_RETURN_IF_ERROR(ReadAll(root, origin, &config));
  return config;
}

Result<LlmConfig> LoadLlmConfig(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return ConfigError(path.string(), "cannot open the config file (does it exist?)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::filesystem::path base = std::filesystem::absolute(path).parent_path();
  return ParseLlmConfig(text.str(), path.string(), base);
}

Result<ProviderSettings> ResolveModel(std::string_view model, const LlmConfig& config) {
  std::string name(model.empty() ? std::string_view(config.default_model) : model);
  if (name.empty()) {
    return ConfigError("model",
                       "no model given: pass --model <provider>:<model> or set "
                       "default_model in the config");
  }
  if (auto it = config.models.find(name); it != config.models.end()) {
    return ResolveNamed(name, it->second, config);
  }
  KF_ASSIGN_OR_RETURN(SpecParts parts, SplitSpec(name));
  KF_ASSIGN_OR_RETURN(ProviderSettings settings, SettingsFromParts(parts));
  if (auto it = config.providers.find(settings.provider); it != config.providers.end()) {
    it->second.ApplyTo(&settings);
    if (!parts.url.empty()) settings.base_url = parts.url;  // The string's URL wins.
    if (settings.wire != WireFormat::kReplay) settings.model = parts.model;
    if (settings.wire == WireFormat::kReplay) settings.base_url = parts.model;
  }
  KF_RETURN_IF_ERROR(Validate(settings, "model"));
  return settings;
}

}  // namespace kforge::llm
