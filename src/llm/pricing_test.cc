#include "kforge/llm/pricing.h"

#include <gtest/gtest.h>

#include <thread>

namespace kforge::llm {
namespace {

PriceTable ParseOrDie(const std::string& text) {
  Result<PriceTable> table = PriceTable::Parse(text, "prices.toml");
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return table.ok() ? *table : PriceTable();
}

TEST(PriceTableTest, TheBuiltInTableParsesAndPricesTheExampleModels) {
  const PriceTable& table = PriceTable::BuiltIn();
  EXPECT_GT(table.size(), 20u);
  for (auto [provider, model] :
       {std::pair{"openai", "gpt-5"}, std::pair{"anthropic", "claude-opus-4-6"},
        std::pair{"gemini", "gemini-2.5-pro"}, std::pair{"ollama", "llama3.2:3b"},
        std::pair{"vllm", "Qwen/Qwen3-8B"}}) {
    EXPECT_NE(table.Find(provider, model), nullptr) << provider << ":" << model;
  }
  EXPECT_EQ(table.Find("openai", "gpt-unknown"), nullptr);
  EXPECT_EQ(table.Find("openai", "o3-mini")->vision, false);
}

TEST(PriceTableTest, GivenADatedModelNameItFallsBackToTheUndatedEntry) {
  const PriceTable& table = PriceTable::BuiltIn();
  EXPECT_EQ(table.Find("anthropic", "claude-sonnet-4-5-20250929"),
            table.Find("anthropic", "claude-sonnet-4-5"));
  EXPECT_EQ(table.Find("openai", "gpt-4o-2024-08-06"), table.Find("openai", "gpt-4o"));
  EXPECT_EQ(table.Find("openai", "gpt-4o-mini-2024-07-18"), table.Find("openai", "gpt-4o-mini"));
  EXPECT_NE(table.Find("openai", "gpt-4o-mini"), table.Find("openai", "gpt-4o"));
}

TEST(CostTest, GivenCachedAndCacheWriteTokensEachHasItsPrice) {
  PriceTable table =
      ParseOrDie("[p.\"m\"]\ninput = 2.0\ncached_input = 0.5\ncache_write = 2.5\noutput = 10.0\n");
  Usage usage;
  usage.input_tokens = 1'000'000;  // 600k uncached + 300k cached + 100k written.
  usage.cached_input_tokens = 300'000;
  usage.cache_write_tokens = 100'000;
  usage.output_tokens = 200'000;
  std::optional<double> cost = table.Cost("p", "m", usage);
  ASSERT_TRUE(cost);
  EXPECT_NEAR(*cost, 0.6 * 2.0 + 0.3 * 0.5 + 0.1 * 2.5 + 0.2 * 10.0, 1e-12);
}

TEST(CostTest, GivenNoCachedPriceCachedTokensCostTheInputPrice) {
  PriceTable table = ParseOrDie("[p.\"m\"]\ninput = 1.0\noutput = 4.0\n");
  Usage usage{100, 40, 0, 10, 0};
  EXPECT_NEAR(*table.Cost("p", "m", usage), (100 * 1.0 + 10 * 4.0) / 1e6, 1e-15);
  EXPECT_FALSE(table.Cost("p", "other", usage));
}

TEST(CostTest, GivenTheGpt5ExampleItMatchesTheHandComputedCost) {
  Usage usage;  // The OpenAI spec's example response: 19 in, 10 out.
  usage.input_tokens = 19;
  usage.output_tokens = 10;
  EXPECT_NEAR(*PriceTable::BuiltIn().Cost("openai", "gpt-5", usage), (19 * 1.25 + 10 * 10.0) / 1e6,
              1e-15);
}

TEST(CostTest, GivenTheLocalModelItCostsNothingRatherThanUnknown) {
  Usage usage{1200, 300, 0, 400, 0};
  std::optional<double> cost = PriceTable::BuiltIn().Cost("local", "qwen2.5-coder-1.5b", usage);
  ASSERT_TRUE(cost);
  EXPECT_EQ(*cost, 0.0);
}

TEST(PriceTableTest, GivenBadEntriesItNamesThem) {
  struct Case {
    std::string text, expected;
  };
  for (const Case& c :
       {Case{"[p.\"m\"]\ninput = 1.0\n", "p.m needs both input and output"},
        Case{"[p.\"m\"]\ninput = -1\noutput = 1\n", "p.m.input must be a number"},
        Case{"[p.\"m\"]\ninput = 1\noutput = 1\ncahced = 1\n", "p.m.cahced"},
        Case{"[p.\"m\"]\ninput = 1\noutput = 1\nvision = 1\n", "vision must be"},
        Case{"p = 3\n", "p must be a table"}, Case{"[p.\"m\"\n", "TOML syntax error"}}) {
    Result<PriceTable> table = PriceTable::Parse(c.text, "prices.toml");
    ASSERT_FALSE(table.ok()) << c.text;
    EXPECT_NE(table.status().message().find(c.expected), std::string::npos)
        << table.status().message();
  }
}

TEST(UsageLedgerTest, GivenCallsItAddsThemPerRunAndPerClient) {
  UsageLedger ledger;
  ledger.Record("openai:gpt-5", Usage{10, 2, 0, 5, 1}, 0.25);
  ledger.Record("openai:gpt-5", Usage{20, 0, 0, 5, 0}, 0.5);
  ledger.Record("vllm:q", Usage{7, 0, 0, 3, 0}, std::nullopt);
  ledger.RecordCacheHit("openai:gpt-5");
  UsageLedger::Totals total = ledger.Total();
  EXPECT_EQ(total.calls, 3);
  EXPECT_EQ(total.cache_hits, 1);
  EXPECT_EQ(total.unpriced_calls, 1);
  EXPECT_EQ(total.usage.input_tokens, 37);
  EXPECT_EQ(total.usage.cached_input_tokens, 2);
  EXPECT_EQ(total.usage.output_tokens, 13);
  EXPECT_DOUBLE_EQ(total.cost_usd, 0.75);
  EXPECT_EQ(ledger.ByClient().at("openai:gpt-5").calls, 2);
  EXPECT_EQ(ledger.ByClient().at("vllm:q").unpriced_calls, 1);
}

TEST(UsageLedgerTest, GivenABudgetItRefusesOnceItIsSpent) {
  UsageLedger ledger;
  EXPECT_TRUE(ledger.CheckBudget().ok());
  ledger.SetBudget(1.0);
  ledger.Record("m", Usage(), 0.6);
  EXPECT_TRUE(ledger.CheckBudget().ok());
  ledger.Record("m", Usage(), 0.6);
  Status status = ledger.CheckBudget();
  EXPECT_EQ(LlmErrorKindOf(status), LlmErrorKind::kBudgetExceeded);
  EXPECT_NE(status.message().find("spent $1.2000 of the $1.0000 budget"), std::string::npos);
}

TEST(UsageLedgerTest, GivenManyThreadsNoCallIsLost) {
  UsageLedger ledger;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&ledger] {
      for (int i = 0; i < 1000; ++i) ledger.Record("m", Usage{1, 0, 0, 1, 0}, 0.001);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ledger.Total().calls, 4000);
  EXPECT_EQ(ledger.Total().usage.input_tokens, 4000);
}

}  // namespace
}  // namespace kforge::llm
