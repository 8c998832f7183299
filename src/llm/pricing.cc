// Price table and usage ledger (pricing.h).
#include "kforge/llm/pricing.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "llm/embedded_data.h"

namespace kforge::llm {

namespace {

Status PriceError(std::string_view origin, std::string detail) {
  return MakeLlmError(LlmErrorKind::kConfig, origin, detail);
}

Result<std::optional<double>> ReadPrice(const toml::table& entry, std::string_view key,
                                        const std::string& name, std::string_view origin) {
  const toml::node* node = entry.get(key);
  if (!node) return std::optional<double>();
  std::optional<double> value = node->value<double>();
  if (!value || *value < 0) {
    return PriceError(origin, name + "." + std::string(key) + " must be a number >= 0");
  }
  return value;
}

Result<ModelPrice> ReadEntry(const toml::table& entry, const std::string& name,
                             std::string_view origin) {
  for (const auto& [key, node] : entry) {
    static constexpr std::string_view kKnown[] = {"input", "output", "cached_input", "cache_write",
                                                  "vision"};
    if (std::find(std::begin(kKnown), std::end(kKnown), key.str()) == std::end(kKnown)) {
      return PriceError(origin, name + "." + std::string(key.str()) + " is not a known key");
    }
  }
  ModelPrice price;
  KF_ASSIGN_OR_RETURN(std::optional<double> input, ReadPrice(entry, "input", name, origin));
  KF_ASSIGN_OR_RETURN(std::optional<double> output, ReadPrice(entry, "output", name, origin));
  if (!input || !output) return PriceError(origin, name + " needs both input and output");
  price.input_per_mtok = *input;
  price.output_per_mtok = *output;
  KF_ASSIGN_OR_RETURN(price.cached_input_per_mtok, ReadPrice(entry, "cached_input", name, origin));
  KF_ASSIGN_OR_RETURN(price.cache_write_per_mtok, ReadPrice(entry, "cache_write", name, origin));
  if (const toml::node* vision = entry.get("vision")) {
    if (!vision->is_boolean()) return PriceError(origin, name + ".vision must be true or false");
    price.vision = vision->value<bool>();
  }
  return price;
}

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "claude-sonnet-4-5-20250929" -> "claude-sonnet-4-5"; "gpt-4o-2024-08-06" -> "gpt-4o".
std::string WithoutDateSuffix(std::string_view model) {
  if (model.size() > 9 && model[model.size() - 9] == '-' &&
      AllDigits(model.substr(model.size() - 8))) {
    return std::string(model.substr(0, model.size() - 9));
  }
  if (model.size() > 11) {
    std::string_view tail = model.substr(model.size() - 11);  // "-YYYY-MM-DD"
    if (tail[0] == '-' && AllDigits(tail.substr(1, 4)) && tail[5] == '-' &&
        AllDigits(tail.substr(6, 2)) && tail[8] == '-' && AllDigits(tail.substr(9, 2))) {
      return std::string(model.substr(0, model.size() - 11));
    }
  }
  return std::string(model);
}

}  // namespace

Result<PriceTable> PriceTable::Parse(std::string_view toml_text, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(toml_text, std::string_view(origin));
  } catch (const toml::parse_error& e) {
    return PriceError(origin, "TOML syntax error at line " + std::to_string(e.source().begin.line) +
                                  ": " + std::string(e.description()));
  }
  PriceTable table;
  for (const auto& [provider, models] : root) {
    const toml::table* model_table = models.as_table();
    if (!model_table) return PriceError(origin, std::string(provider.str()) + " must be a table");
    for (const auto& [model, entry] : *model_table) {
      std::string name = std::string(provider.str()) + "." + std::string(model.str());
      if (!entry.as_table()) return PriceError(origin, name + " must be a table");
      KF_ASSIGN_OR_RETURN(ModelPrice price, ReadEntry(*entry.as_table(), name, origin));
      table.prices_[std::string(provider.str()) + ":" + std::string(model.str())] = price;
    }
  }
  return table;
}

Result<PriceTable> PriceTable::Load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return PriceError(path.string(), "cannot open the price table");
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path.string());
}

const PriceTable& PriceTable::BuiltIn() {
  static const PriceTable* table = [] {
    Result<PriceTable> parsed = Parse(kBuiltInPricesToml, "src/llm/prices.toml");
    assert(parsed.ok() && "the built-in price table must parse");
    return new PriceTable(parsed.ok() ? std::move(parsed).value() : PriceTable());
  }();
  return *table;
}

const ModelPrice* PriceTable::Find(std::string_view provider, std::string_view model) const {
  std::string prefix = std::string(provider) + ":";
  for (const std::string& key :
       {prefix + std::string(model), prefix + WithoutDateSuffix(model), prefix + "*"}) {
    auto it = prices_.find(key);
    if (it != prices_.end()) return &it->second;
  }
  return nullptr;
}

double CostOf(const ModelPrice& price, const Usage& usage) {
  int64_t uncached = std::max<int64_t>(
      0, usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens);
  double usd =
      uncached * price.input_per_mtok +
      usage.cached_input_tokens * price.cached_input_per_mtok.value_or(price.input_per_mtok) +
      usage.cache_write_tokens * price.cache_write_per_mtok.value_or(price.input_per_mtok) +
      usage.output_tokens * price.output_per_mtok;
  return usd / 1e6;
}

std::optional<double> PriceTable::Cost(std::string_view provider, std::string_view model,
                                       const Usage& usage) const {
  const ModelPrice* price = Find(provider, model);
  if (!price) return std::nullopt;
  return CostOf(*price, usage);
}

namespace {
void AddTo(UsageLedger::Totals* totals, const Usage& usage, std::optional<double> cost) {
  ++totals->calls;
  totals->usage += usage;
  if (cost) {
    totals->cost_usd += *cost;
  } else {
    ++totals->unpriced_calls;
  }
}
}  // namespace

void UsageLedger::Record(const std::string& client, const Usage& usage,
                         std::optional<double> cost_usd) {
  std::lock_guard<std::mutex> lock(mu_);
  AddTo(&total_, usage, cost_usd);
  AddTo(&by_client_[client], usage, cost_usd);
}

void UsageLedger::RecordCacheHit(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  ++total_.cache_hits;
  ++by_client_[client].cache_hits;
}

UsageLedger::Totals UsageLedger::Total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

std::map<std::string, UsageLedger::Totals> UsageLedger::ByClient() const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_client_;
}

void UsageLedger::SetBudget(std::optional<double> usd) {
  std::lock_guard<std::mutex> lock(mu_);
  budget_usd_ = usd;
}

Status UsageLedger::CheckBudget() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!budget_usd_ || total_.cost_usd < *budget_usd_) return Status::Ok();
  char text[160];
  std::snprintf(text, sizeof text,
                "spent $%.4f of the $%.4f budget (budget_usd); raise it in the config to go on",
                total_.cost_usd, *budget_usd_);
  return MakeLlmError(LlmErrorKind::kBudgetExceeded, "budget", text);
}

}  // namespace kforge::llm
