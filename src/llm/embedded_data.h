// Data files compiled into the binary, so kforge works without its source tree. The text comes
// from the real files (src/llm/prices.toml, src/llm/prompts/*.txt); CMake writes them into
// embedded_data.cc at configure time.
//
// Thread-safety: constants.
#ifndef KFORGE_LLM_EMBEDDED_DATA_H_
#define KFORGE_LLM_EMBEDDED_DATA_H_

namespace kforge::llm {

extern const char kBuiltInPricesToml[];  // src/llm/prices.toml
extern const char kPingPrompt[];         // src/llm/prompts/ping.txt

}  // namespace kforge::llm

#endif  // KFORGE_LLM_EMBEDDED_DATA_H_
