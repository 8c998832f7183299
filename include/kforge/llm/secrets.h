// API keys: where they may come from, and how they are kept out of everything kforge writes.
//
// A key comes only from an environment variable or from a key file that its owner alone can
// read (no group or other permission bits, owned by the current user). A config file never
// holds a key. Every loaded key is registered for redaction: Redact() replaces it in any text,
// and every sink of the LLM layer (error messages, logs, transcripts, the response cache) passes
// its text through Redact() before it leaves the process or the call.
//
// Thread-safety: Secret is a value. LoadApiKey, RegisterSecret, ContainsSecret and Redact are safe
// to call from many threads at once.
#ifndef KFORGE_LLM_SECRETS_H_
#define KFORGE_LLM_SECRETS_H_

#include <string>
#include <string_view>

#include "kforge/status.h"

namespace kforge::llm {

// Holds a key. It has no stream operator and no implicit conversion: the only way to the bytes
// is Reveal(), used where a request header is built. Wipes its memory on destruction.
class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  Secret(const Secret&) = default;
  Secret& operator=(const Secret&) = default;
  ~Secret();

  bool empty() const { return value_.empty(); }
  const std::string& Reveal() const { return value_; }

 private:
  std::string value_;
};

// Loads a key: from `key_file` if it is not empty, else from the environment variable
// `env_var` if it is set and not empty. Registers the key for redaction.
// Returns an empty Secret when neither gives a key and `required` is false.
// Errors (InvalidArgument tagged [config], never containing the key): the variable is unset
// and the key is required; the file is missing, not a regular file, not owned by the current
// user, or readable/writable by group or others (the message says "chmod 600 <file>"); the
// file is empty or holds more than one line.
Result<Secret> LoadApiKey(std::string_view env_var, std::string_view key_file, bool required,
                          std::string_view provider);

// Adds a key to the process-wide redaction list. Keys shorter than 8 characters are ignored
// (they would redact ordinary words).
void RegisterSecret(const Secret& secret);

// True when `text` holds a registered key whole (exec: withholds such environment variables).
bool ContainsSecret(std::string_view text);

// Returns text with every registered key replaced by "[REDACTED]". Short texts (under 64 KiB,
// e.g. error messages) also lose any fragment of 8 or more characters of a key, which catches
// keys that a server echoes partially masked.
std::string Redact(std::string_view text);

}  // namespace kforge::llm

#endif  // KFORGE_LLM_SECRETS_H_
