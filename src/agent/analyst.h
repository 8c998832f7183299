// The performance-analysis agent: a profile in, one structured recommendation out.
//
// BuildProfile normalizes a correct verdict into what the analyst reads (timing statistics,
// roofline position, achieved bandwidth and FLOP rate, the backend's counters where it has
// them). RuleAnalyst classifies the roofline position without a model (offline mode);
// LlmAnalyst asks a model with prompts/analyst_system.md and prompts/analyze.md.
#ifndef KFORGE_AGENT_ANALYST_H_
#define KFORGE_AGENT_ANALYST_H_

#include <string>

#include <nlohmann/json.hpp>

#include "kforge/llm/llm.h"
#include "kforge/status.h"
#include "kforge/verdict.h"

namespace kforge {

struct Recommendation {
  std::string bottleneck, evidence, change, expected_gain;
  std::string source;  // "rules" or "llm"
  nlohmann::json ToJson() const;
  std::string ToText() const;  // for the generation prompt
};

nlohmann::json BuildProfile(const Verdict& verdict);

Recommendation RuleAnalyst(const nlohmann::json& profile);

// Parses a model's answer: a JSON object, possibly inside a ```json fence or with prose
// around it. Fails with a message for the model when no such object is there.
Result<Recommendation> ParseRecommendation(const std::string& answer);

}  // namespace kforge

#endif  // KFORGE_AGENT_ANALYST_H_
