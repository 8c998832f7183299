// Accounting: what a call cost, and what a run has spent.
//
// PriceTable maps "<provider>:<model>" to USD prices per million tokens. It is a TOML file the
// user can edit; the built-in one is src/llm/prices.toml, compiled into the binary. Format:
//   [openai."gpt-5"]
//   input = 1.25          # USD per million input tokens not read from the cache
//   cached_input = 0.125  # optional; default = input
//   cache_write = 1.25    # optional; default = input (Anthropic cache writes)
//   output = 10.0         # USD per million output tokens (reasoning included)
//   vision = true         # optional: whether the model accepts images
//   [ollama."*"]          # provider-wide fallback
//   input = 0.0
//   output = 0.0
// Lookup: exact model, then the model without a date suffix ("-20250929", "-2024-08-06"), then
// "<provider>:*".
//
// UsageLedger adds up usage and cost over a run, for reports and budgets.
//
// Thread-safety: PriceTable is immutable after loading (safe to share). UsageLedger is
// internally synchronised.
#ifndef KFORGE_LLM_PRICING_H_
#define KFORGE_LLM_PRICING_H_

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "kforge/llm/llm.h"
#include "kforge/status.h"

namespace kforge::llm {

struct ModelPrice {
  double input_per_mtok = 0;
  double output_per_mtok = 0;
  std::optional<double> cached_input_per_mtok;
  std::optional<double> cache_write_per_mtok;
  std::optional<bool> vision;
};

class PriceTable {
 public:
  PriceTable() = default;
  // Parses the TOML text; origin names it in error messages. InvalidArgument tagged [config]
  // on a syntax error, a missing input/output price, a negative price or an unknown key.
  static Result<PriceTable> Parse(std::string_view toml_text, std::string_view origin);
  static Result<PriceTable> Load(const std::filesystem::path& path);
  // The table compiled in from src/llm/prices.toml.
  static const PriceTable& BuiltIn();

  // The entry for the model (see lookup order above), or nullptr.
  const ModelPrice* Find(std::string_view provider, std::string_view model) const;
  // Cost of one call in USD, or nullopt when the model has no price.
  std::optional<double> Cost(std::string_view provider, std::string_view model,
                             const Usage& usage) const;
  size_t size() const { return prices_.size(); }

 private:
  std::map<std::string, ModelPrice, std::less<>> prices_;  // Key "<provider>:<model>".
};

// Cost of `usage` at `price`, in USD.
double CostOf(const ModelPrice& price, const Usage& usage);

class UsageLedger {
 public:
  struct Totals {
    int64_t calls = 0;           // Answers received from providers (and replays).
    int64_t cache_hits = 0;      // Answers served from the response cache (not in calls).
    int64_t unpriced_calls = 0;  // Calls whose model had no price: cost_usd undercounts.
    Usage usage;
    double cost_usd = 0;
  };

  // Adds one call under the client name ("openai:gpt-5").
  void Record(const std::string& client, const Usage& usage, std::optional<double> cost_usd);
  void RecordCacheHit(const std::string& client);
  Totals Total() const;
  std::map<std::string, Totals> ByClient() const;

  // Unset: no budget.
  void SetBudget(std::optional<double> usd);
  // OK while spending is below the budget; else an error tagged [budget_exceeded].
  Status CheckBudget() const;

 private:
  mutable std::mutex mu_;
  Totals total_;
  std::map<std::string, Totals> by_client_;
  std::optional<double> budget_usd_;
};

}  // namespace kforge::llm

#endif  // KFORGE_LLM_PRICING_H_
