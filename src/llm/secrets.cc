// Key loading and redaction. See secrets.h for the rules.
#include "kforge/llm/secrets.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "kforge/llm/llm.h"

namespace kforge::llm {

namespace {

constexpr size_t kMinSecretLength = 8;
constexpr size_t kFragmentLength = 8;
constexpr size_t kFragmentScanLimit = 64 * 1024;
constexpr std::string_view kRedacted = "[REDACTED]";

struct Registry {
  std::mutex mu;
  std::vector<std::string> secrets;
};

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();  // Never destroyed: used during shutdown.
  return *registry;
}

std::vector<std::string> RegisteredSecrets() {
  Registry& registry = GlobalRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  return registry.secrets;
}

void ReplaceAll(std::string* text, std::string_view needle) {
  for (size_t at = text->find(needle); at != std::string::npos;
       at = text->find(needle, at + kRedacted.size())) {
    text->replace(at, needle.size(), kRedacted);
  }
}

// Marks every byte of `text` covered by an 8-byte window that also occurs inside a secret, then
// replaces each marked run with [REDACTED].
std::string RedactFragments(const std::string& text, const std::vector<std::string>& secrets) {
  std::unordered_set<std::string_view> windows;
  for (const std::string& secret : secrets) {
    for (size_t i = 0; i + kFragmentLength <= secret.size(); ++i) {
      windows.insert(std::string_view(secret).substr(i, kFragmentLength));
    }
  }
  std::vector<bool> covered(text.size(), false);
  std::string_view view(text);
  for (size_t i = 0; i + kFragmentLength <= text.size(); ++i) {
    if (!windows.count(view.substr(i, kFragmentLength))) continue;
    for (size_t j = i; j < i + kFragmentLength; ++j) covered[j] = true;
  }
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!covered[i]) {
      out.push_back(text[i]);
    } else if (i == 0 || !covered[i - 1]) {
      out.append(kRedacted);
    }
  }
  return out;
}

Status ConfigError(std::string_view provider, std::string detail) {
  return MakeLlmError(LlmErrorKind::kConfig, provider, detail);
}

std::string ExpandHome(std::string_view path) {
  if (path.substr(0, 2) != "~/") return std::string(path);
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + std::string(path.substr(1));
}

Status CheckKeyFileMode(const std::string& path, std::string_view provider) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return ConfigError(provider, "key file " + path + " does not exist or cannot be read");
  }
  if (!S_ISREG(info.st_mode)) {
    return ConfigError(provider, "key file " + path + " is not a regular file");
  }
  if (info.st_uid != geteuid()) {
    return ConfigError(provider, "key file " + path +
                                     " is not owned by the current user; a key file must be "
                                     "yours alone");
  }
  if ((info.st_mode & 077) != 0) {
    std::ostringstream mode;
    mode << std::oct << (info.st_mode & 0777);
    return ConfigError(provider, "key file " + path + " has mode 0" + mode.str() +
                                     ": group or others can access it; run chmod 600 " + path);
  }
  return Status::Ok();
}

Result<Secret> ReadKeyFile(std::string_view file, std::string_view provider) {
  std::string path = ExpandHome(file);
  KF_RETURN_IF_ERROR(CheckKeyFileMode(path, provider));
  std::ifstream in(path, std::ios::binary);
  if (!in) return ConfigError(provider, "cannot open key file " + path);
  std::ostringstream content;
  content << in.rdbuf();
  std::string key = content.str();
  while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
  size_t start = 0;
  while (start < key.size() && std::isspace(static_cast<unsigned char>(key[start]))) ++start;
  key.erase(0, start);
  if (key.empty()) return ConfigError(provider, "key file " + path + " is empty");
  if (key.find_first_of("\r\n") != std::string::npos) {
    return ConfigError(provider, "key file " + path + " must hold the key on one line only");
  }
  return Secret(std::move(key));
}

}  // namespace

Secret::~Secret() {
  // Overwrite through a volatile pointer so the compiler cannot drop the stores.
  volatile char* bytes = value_.data();
  for (size_t i = 0; i < value_.size(); ++i) bytes[i] = 0;
}

Result<Secret> LoadApiKey(std::string_view env_var, std::string_view key_file, bool required,
                          std::string_view provider) {
  Secret secret;
  if (!key_file.empty()) {
    KF_ASSIGN_OR_RETURN(secret, ReadKeyFile(key_file, provider));
  } else if (!env_var.empty()) {
    const char* value = std::getenv(std::string(env_var).c_str());
    if (value != nullptr) secret = Secret(value);
  }
  if (secret.empty() && required) {
    std::string where = env_var.empty() ? std::string("api_key_file in the config")
                                        : "the environment variable " + std::string(env_var) +
                                              " (or api_key_file in the config)";
    return ConfigError(provider, "no API key: set " + where);
  }
  RegisterSecret(secret);
  return secret;
}

void RegisterSecret(const Secret& secret) {
  if (secret.Reveal().size() < kMinSecretLength) return;
  Registry& registry = GlobalRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  for (const std::string& known : registry.secrets) {
    if (known == secret.Reveal()) return;
  }
  registry.secrets.push_back(secret.Reveal());
}

bool ContainsSecret(std::string_view text) {
  for (const std::string& secret : RegisteredSecrets()) {
    if (text.find(secret) != std::string_view::npos) return true;
  }
  return false;
}

std::string Redact(std::string_view text) {
  std::vector<std::string> secrets = RegisteredSecrets();
  std::string out(text);
  if (secrets.empty()) return out;
  for (const std::string& secret : secrets) ReplaceAll(&out, secret);
  if (out.size() <= kFragmentScanLimit) out = RedactFragments(out, secrets);
  return out;
}

}  // namespace kforge::llm
