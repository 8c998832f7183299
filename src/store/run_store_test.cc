// Specifications of the run store: what it keeps, how it numbers attempts, what it adds up, and
// that a writer killed at any moment loses nothing it reported as written.
#include "store/run_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace kforge {
namespace {

namespace fs = std::filesystem;

// A fresh directory, removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kforge-store-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Runs one constant statement on the database through a separate connection and returns the
// first column of its first row ("" if none).
std::string QueryDirectly(const fs::path& db, const char* sql) {
  sqlite3* handle = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(handle, sql, -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(handle);
  std::string first;
  int rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW && sqlite3_column_text(stmt, 0)) {
    first = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  EXPECT_TRUE(rc == SQLITE_ROW || rc == SQLITE_DONE) << sqlite3_errmsg(handle);
  sqlite3_finalize(stmt);
  sqlite3_close_v2(handle);
  return first;
}

bool IsIsoUtc(const std::string& s) {
  static const std::regex kIso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  return std::regex_match(s, kIso);
}

RunRow SampleRun(const std::string& problem) {
  RunRow r;
  r.problem = problem;
  r.problem_path = "problems/" + problem + "/problem.toml";
  r.backend = "cpp";
  r.model = "offline";
  r.status = "running";
  r.config_json = R"({"iterations": 10})";
  return r;
}

AttemptRow SampleAttempt(int64_t run_id, int64_t iteration) {
  AttemptRow a;
  a.run_id = run_id;
  a.iteration = iteration;
  a.phase = "functional";
  a.state = "generating";
  a.parent = 0;
  a.source = "void kernel() {}";
  a.extra_files_json = "{}";
  a.source_hash = "0123456789abcdef";
  a.params_json = "{}";
  return a;
}

LlmCallRow SampleCall(int64_t run_id, int64_t input, int64_t output, double cost) {
  LlmCallRow c;
  c.run_id = run_id;
  c.attempt = 1;
  c.agent = "generator";
  c.model = "test-model";
  c.prompt_json = R"({"messages": []})";
  c.response_text = "```cpp\n...\n```";
  c.finish_reason = "stop";
  c.input_tokens = input;
  c.output_tokens = output;
  c.cached_tokens = input / 2;
  c.cost_usd = cost;
  c.latency_ms = 1234.5;
  c.request_id = "req-1";
  c.prompt_chars = input * 3;
  c.prompt_tokens_estimate = input + 5;
  c.prompt_shrunk = "dropped 1 oldest memory line";
  return c;
}

class RunStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<RunStore> OpenStore() {
    auto store = RunStore::Open(db_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  TempDir dir_;
  fs::path db_ = dir_.path() / "workspace" / ".kforge" / "runs.db";
};

// Totals' covering indexes (the loop adds up a run after every step): made with the schema, and
// added on open to a store made without them.
TEST_F(RunStoreTest, GivenAStoreWithoutTheTotalsIndexes_OpenAddsThem) {
  const char* count = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN ('llm_calls_totals', 'attempts_status')";
  ASSERT_TRUE(OpenStore());
  EXPECT_EQ(QueryDirectly(db_, count), "2");
  QueryDirectly(db_, "DROP INDEX llm_calls_totals");
  QueryDirectly(db_, "DROP INDEX attempts_status");
  EXPECT_EQ(QueryDirectly(db_, count), "0");
  auto store = OpenStore();
  ASSERT_TRUE(store);
  EXPECT_EQ(QueryDirectly(db_, count), "2");
  EXPECT_EQ(QueryDirectly(db_, "PRAGMA integrity_check"), "ok");
}

TEST_F(RunStoreTest, GivenANewPath_OpenCreatesTheFolderAndAVersionedWalDatabase) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  EXPECT_TRUE(fs::exists(db_));
  EXPECT_EQ(QueryDirectly(db_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QueryDirectly(db_, "SELECT MAX(version) FROM schema_version"), "3");
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_.c_str(), &handle, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  for (const char* table : {"runs", "attempts", "llm_calls", "recommendations", "stages"}) {
    EXPECT_EQ(sqlite3_table_column_metadata(handle, nullptr, table, "created_at", nullptr, nullptr,
                                            nullptr, nullptr, nullptr),
              SQLITE_OK)
        << table;
  }
  sqlite3_close_v2(handle);
}

TEST_F(RunStoreTest, GivenARun_GetRunReturnsEveryFieldWithUtcTimestamps) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  RunRow in = SampleRun("matmul");
  in.stop_reason = "not yet";
  in.best_attempt = 3;
  in.best_ms = 1.25;
  in.seed_ms = 9.5;
  auto id = store->CreateRun(in);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_GT(*id, 0);

  auto out = store->GetRun(*id);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->id, *id);
  EXPECT_EQ(out->problem, "matmul");
  EXPECT_EQ(out->problem_path, "problems/matmul/problem.toml");
  EXPECT_EQ(out->backend, "cpp");
  EXPECT_EQ(out->model, "offline");
  EXPECT_EQ(out->status, "running");
  EXPECT_EQ(out->stop_reason, "not yet");
  EXPECT_EQ(out->config_json, R"({"iterations": 10})");
  EXPECT_EQ(out->best_attempt, 3);
  EXPECT_DOUBLE_EQ(out->best_ms, 1.25);
  EXPECT_DOUBLE_EQ(out->seed_ms, 9.5);
  EXPECT_TRUE(IsIsoUtc(out->created_at)) << out->created_at;
  EXPECT_EQ(out->updated_at, out->created_at);
}

TEST_F(RunStoreTest, GivenAMissingRun_GetRunIsNotFoundWithAHint) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  auto run = store->GetRun(42);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(run.status().message(), "no run 42 in " + db_.string() + "; `kforge runs` lists them");
}

TEST_F(RunStoreTest, GivenSeveralRuns_ListRunsIsNewestFirst) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(store->CreateRun(SampleRun(name)).ok());
  auto runs = store->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].problem, "c");
  EXPECT_EQ((*runs)[1].problem, "b");
  EXPECT_EQ((*runs)[2].problem, "a");
  EXPECT_GT((*runs)[0].id, (*runs)[2].id);
}

TEST_F(RunStoreTest, GivenAnUpdate_UpdateRunReplacesFieldsAndMovesUpdatedAtOnly) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t id = store->CreateRun(SampleRun("matmul")).value();
  RunRow before = store->GetRun(id).value();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));

  RunRow change = before;
  change.status = "done";
  change.stop_reason = "budget: iterations";
  change.best_attempt = 7;
  change.best_ms = 0.5;
  change.created_at = "1999-01-01T00:00:00.000Z";  // ignored: creation time is the store's
  ASSERT_TRUE(store->UpdateRun(change).ok());

  RunRow after = store->GetRun(id).value();
  EXPECT_EQ(after.status, "done");
  EXPECT_EQ(after.stop_reason, "budget: iterations");
  EXPECT_EQ(after.best_attempt, 7);
  EXPECT_DOUBLE_EQ(after.best_ms, 0.5);
  EXPECT_EQ(after.created_at, before.created_at);
  EXPECT_TRUE(IsIsoUtc(after.updated_at));
  EXPECT_GT(after.updated_at, before.updated_at);  // ISO 8601 sorts as text
}

TEST_F(RunStoreTest, GivenAMissingRun_UpdateRunIsNotFound) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  RunRow ghost = SampleRun("x");
  ghost.id = 9;
  Status s = store->UpdateRun(ghost);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("no run 9"), std::string::npos) << s.message();
}

TEST_F(RunStoreTest, GivenTwoRuns_AttemptsAreNumberedOneToNWithinEachRun) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t a = store->CreateRun(SampleRun("a")).value();
  int64_t b = store->CreateRun(SampleRun("b")).value();
  for (int i = 1; i <= 3; ++i) {
    AttemptRow attempt = SampleAttempt(a, i);
    attempt.number = 100;  // ignored: the store picks the number
    EXPECT_EQ(store->AddAttempt(attempt).value(), i);
    EXPECT_EQ(store->AddAttempt(SampleAttempt(b, i)).value(), 2 * i - 1);
    EXPECT_EQ(store->AddAttempt(SampleAttempt(b, i)).value(), 2 * i);
  }
  auto attempts = store->Attempts(a);
  ASSERT_TRUE(attempts.ok()) << attempts.status().ToString();
  ASSERT_EQ(attempts->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*attempts)[i].number, i + 1);
    EXPECT_EQ((*attempts)[i].iteration, i + 1);
    EXPECT_TRUE(IsIsoUtc((*attempts)[i].created_at));
  }
  EXPECT_EQ(store->Attempts(b)->size(), 6u);
}

TEST_F(RunStoreTest, GivenAnAttempt_GetAttemptReturnsEveryField) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t run = store->CreateRun(SampleRun("a")).value();
  AttemptRow in = SampleAttempt(run, 4);
  in.phase = "tune";
  in.parent = 2;
  in.extra_files_json = R"({"k.cl": "kernel void f() {}"})";
  in.params_json = R"({"TILE": 16})";
  in.status = "correct";
  in.verdict_json = R"({"status": "correct"})";
  in.median_ms = 2.5;
  in.sol_percent = 61.0;
  int64_t number = store->AddAttempt(in).value();

  auto out = store->GetAttempt(run, number);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->run_id, run);
  EXPECT_EQ(out->number, 1);
  EXPECT_EQ(out->iteration, 4);
  EXPECT_EQ(out->phase, "tune");
  EXPECT_EQ(out->state, "generating");
  EXPECT_EQ(out->parent, 2);
  EXPECT_EQ(out->source, in.source);
  EXPECT_EQ(out->extra_files_json, in.extra_files_json);
  EXPECT_EQ(out->source_hash, in.source_hash);
  EXPECT_EQ(out->params_json, in.params_json);
  EXPECT_EQ(out->status, "correct");
  EXPECT_EQ(out->verdict_json, in.verdict_json);
  EXPECT_DOUBLE_EQ(out->median_ms, 2.5);
  EXPECT_DOUBLE_EQ(out->sol_percent, 61.0);
}

TEST_F(RunStoreTest, GivenAnUpdate_UpdateAttemptReplacesOnlyTheMutableFields) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t run = store->CreateRun(SampleRun("a")).value();
  int64_t number = store->AddAttempt(SampleAttempt(run, 1)).value();

  AttemptRow change = store->GetAttempt(run, number).value();
  change.state = "done";
  change.status = "wrong_output";
  change.verdict_json = R"({"status": "wrong_output"})";
  change.median_ms = 3.0;
  change.sol_percent = 12.5;
  change.source = "void kernel() { /* fixed */ }";
  change.phase = "optimize";  // not mutable: stays "functional"
  change.iteration = 99;      // not mutable
  ASSERT_TRUE(store->UpdateAttempt(change).ok());

  AttemptRow after = store->GetAttempt(run, number).value();
  EXPECT_EQ(after.state, "done");
  EXPECT_EQ(after.status, "wrong_output");
  EXPECT_EQ(after.verdict_json, change.verdict_json);
  EXPECT_DOUBLE_EQ(after.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(after.sol_percent, 12.5);
  EXPECT_EQ(after.source, change.source);
  EXPECT_EQ(after.phase, "functional");
  EXPECT_EQ(after.iteration, 1);
}

TEST_F(RunStoreTest, GivenMissingAttemptsOrRuns_AttemptCallsAreNotFound) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t run = store->CreateRun(SampleRun("a")).value();
  EXPECT_EQ(store->GetAttempt(run, 1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(
      store->GetAttempt(run + 1, 1).status().message(),
      "no run " + std::to_string(run + 1) + " in " + db_.string() + "; `kforge runs` lists them");
  AttemptRow ghost = SampleAttempt(run, 1);
  ghost.number = 5;
  EXPECT_EQ(store->UpdateAttempt(ghost).code(), StatusCode::kNotFound);

  auto orphan = store->AddAttempt(SampleAttempt(run + 1, 1));
  EXPECT_EQ(orphan.status().code(), StatusCode::kNotFound) << orphan.status().ToString();
  EXPECT_EQ(store->Attempts(run + 1)->size(), 0u);
}

TEST_F(RunStoreTest, GivenLlmCalls_TheyRoundTripAndTotalsAddThemUp) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t run = store->CreateRun(SampleRun("a")).value();
  int64_t other = store->CreateRun(SampleRun("b")).value();
  LlmCallRow failed = SampleCall(run, 10, 0, 0.0);
  failed.error = "http 429: rate limited";
  failed.finish_reason = "";
  int64_t id1 = store->AddLlmCall(SampleCall(run, 1000, 200, 0.25)).value();
  int64_t id2 = store->AddLlmCall(SampleCall(run, 3000, 400, 0.5)).value();
  int64_t id3 = store->AddLlmCall(failed).value();
  ASSERT_TRUE(store->AddLlmCall(SampleCall(other, 7, 7, 7.0)).ok());
  EXPECT_LT(id1, id2);
  EXPECT_LT(id2, id3);

  auto calls = store->LlmCalls(run);
  ASSERT_TRUE(calls.ok()) << calls.status().ToString();
  ASSERT_EQ(calls->size(), 3u);
  const LlmCallRow& first = (*calls)[0];
  EXPECT_EQ(first.id, id1);
  EXPECT_EQ(first.run_id, run);
  EXPECT_EQ(first.attempt, 1);
  EXPECT_EQ(first.agent, "generator");
  EXPECT_EQ(first.model, "test-model");
  EXPECT_EQ(first.prompt_json, R"({"messages": []})");
  EXPECT_EQ(first.response_text, "```cpp\n...\n```");
  EXPECT_EQ(first.finish_reason, "stop");
  EXPECT_EQ(first.input_tokens, 1000);
  EXPECT_EQ(first.output_tokens, 200);
  EXPECT_EQ(first.cached_tokens, 500);
  EXPECT_DOUBLE_EQ(first.cost_usd, 0.25);
  EXPECT_DOUBLE_EQ(first.latency_ms, 1234.5);
  EXPECT_EQ(first.request_id, "req-1");
  EXPECT_EQ(first.prompt_chars, 3000);
  EXPECT_EQ(first.prompt_tokens_estimate, 1005);
  EXPECT_EQ(first.prompt_shrunk, "dropped 1 oldest memory line");
  EXPECT_TRUE(IsIsoUtc(first.created_at));
  EXPECT_EQ((*calls)[2].error, "http 429: rate limited");
  EXPECT_EQ(first.details_json, "{}");

  auto totals = store->Totals(run);
  ASSERT_TRUE(totals.ok()) << totals.status().ToString();
  EXPECT_EQ(totals->llm_calls, 2);  // answered
  EXPECT_EQ(totals->failed_llm_calls, 1);
  EXPECT_EQ(totals->input_tokens, 4010);
  EXPECT_EQ(totals->output_tokens, 600);
  EXPECT_EQ(totals->cached_tokens, 500 + 1500 + 5);
  EXPECT_DOUBLE_EQ(totals->cost_usd, 0.75);
}

TEST_F(RunStoreTest, GivenAttemptsAndStages_TotalsCountCorrectAttemptsAndSeconds) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t run = store->CreateRun(SampleRun("a")).value();
  for (const char* status : {"correct", "wrong_output", "correct", ""}) {
    AttemptRow a = SampleAttempt(run, 1);
    a.status = status;
    ASSERT_TRUE(store->AddAttempt(a).ok());
  }
  ASSERT_TRUE(
      store->AddStage({.run_id = run, .attempt = 1, .stage = "generate", .seconds = 1.5}).ok());
  ASSERT_TRUE(
      store->AddStage({.run_id = run, .attempt = 2, .stage = "profile", .seconds = 0.25}).ok());

  RunTotals t = store->Totals(run).value();
  EXPECT_EQ(t.attempts, 4);
  EXPECT_EQ(t.correct, 2);
  EXPECT_EQ(t.llm_calls, 0);
  EXPECT_EQ(t.input_tokens, 0);
  EXPECT_DOUBLE_EQ(t.cost_usd, 0.0);
  EXPECT_DOUBLE_EQ(t.stage_seconds, 1.75);
}

// Candidates generated in parallel: their stages overlap in time. The run's time counts the
// overlap once; the stages' seconds added up are the work done.
TEST_F(RunStoreTest, GivenOverlappingStages_WallSecondsCountTheOverlapOnce) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t run = store->CreateRun(SampleRun("a")).value();
  // Two 30 s generations that ended within milliseconds of each other ran side by side.
  ASSERT_TRUE(store->AddStage({.run_id = run, .attempt = 2, .stage = "generate", .seconds = 30}).ok());
  ASSERT_TRUE(store->AddStage({.run_id = run, .attempt = 3, .stage = "generate", .seconds = 30}).ok());
  RunTotals t = store->Totals(run).value();
  EXPECT_DOUBLE_EQ(t.stage_seconds, 60);
  EXPECT_NEAR(t.wall_seconds, 30, 1.0);
  EXPECT_GE(t.wall_seconds, 30 - 1e-3);
}

// A store made by the previous kforge (schema 1, no details_json) is upgraded on open, keeps its
// rows, and reads them with empty details.
TEST_F(RunStoreTest, GivenAVersionOneStore_OpenUpgradesItAndKeepsItsRows) {
  {
    auto store = OpenStore();
    ASSERT_TRUE(store);
    int64_t run = store->CreateRun(SampleRun("old")).value();
    ASSERT_TRUE(store->AddLlmCall(SampleCall(run, 10, 5, 0.1)).ok());
    AttemptRow a;
    a.run_id = run;
    a.phase = "seed";
    a.state = "done";
    ASSERT_TRUE(store->AddAttempt(a).ok());
  }
  for (const char* column : {"details_json", "prompt_chars", "prompt_tokens_estimate", "prompt_shrunk"})
    QueryDirectly(db_, (std::string("ALTER TABLE llm_calls DROP COLUMN ") + column).c_str());
  QueryDirectly(db_, "ALTER TABLE attempts DROP COLUMN seconds_json");
  QueryDirectly(db_, "DELETE FROM schema_version WHERE version > 1");
  ASSERT_EQ(QueryDirectly(db_, "SELECT MAX(version) FROM schema_version"), "1");
  auto store = OpenStore();
  ASSERT_TRUE(store);
  EXPECT_EQ(QueryDirectly(db_, "SELECT MAX(version) FROM schema_version"), "3");
  AttemptRow old = store->GetAttempt(1, 1).value();
  EXPECT_EQ(old.seconds_json, "{}");
  old.seconds_json = R"({"queue":0.5,"compile":1.25})";
  ASSERT_TRUE(store->UpdateAttempt(old).ok());
  EXPECT_EQ(store->GetAttempt(1, 1).value().seconds_json, R"({"queue":0.5,"compile":1.25})");
  auto calls = store->LlmCalls(1);
  ASSERT_TRUE(calls.ok()) << calls.status().ToString();
  ASSERT_EQ(calls->size(), 1u);
  EXPECT_EQ((*calls)[0].input_tokens, 10);
  EXPECT_EQ((*calls)[0].details_json, "{}");
  LlmCallRow streamed = SampleCall(1, 1, 1, 0);
  streamed.details_json = R"({"streamed":true})";
  ASSERT_TRUE(store->AddLlmCall(streamed).ok());
  EXPECT_EQ(store->LlmCalls(1).value().back().details_json, R"({"streamed":true})");
  EXPECT_EQ(QueryDirectly(db_, "PRAGMA integrity_check"), "ok");
}

TEST_F(RunStoreTest, GivenAnEmptyOrMissingRun_TotalsAreZeroOrNotFound) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t run = store->CreateRun(SampleRun("a")).value();
  RunTotals t = store->Totals(run).value();
  EXPECT_EQ(t.attempts, 0);
  EXPECT_EQ(t.llm_calls, 0);
  EXPECT_DOUBLE_EQ(t.stage_seconds, 0.0);
  EXPECT_EQ(store->Totals(run + 1).status().code(), StatusCode::kNotFound);
}

TEST_F(RunStoreTest, GivenRecommendations_TheyComeBackInOrder) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t run = store->CreateRun(SampleRun("a")).value();
  ASSERT_TRUE(
      store
          ->AddRecommendation(
              {.run_id = run, .attempt = 1, .source = "rules", .json = R"({"change": "a"})"})
          .ok());
  ASSERT_TRUE(store
                  ->AddRecommendation(
                      {.run_id = run, .attempt = 2, .source = "llm", .json = R"({"change": "b"})"})
                  .ok());
  auto recs = store->Recommendations(run);
  ASSERT_TRUE(recs.ok()) << recs.status().ToString();
  ASSERT_EQ(recs->size(), 2u);
  EXPECT_EQ((*recs)[0].run_id, run);
  EXPECT_EQ((*recs)[0].attempt, 1);
  EXPECT_EQ((*recs)[0].source, "rules");
  EXPECT_EQ((*recs)[0].json, R"({"change": "a"})");
  EXPECT_EQ((*recs)[1].source, "llm");
  EXPECT_EQ(
      store->AddRecommendation({.run_id = run + 1, .attempt = 1, .source = "llm", .json = "{}"})
          .code(),
      StatusCode::kNotFound);
}

TEST_F(RunStoreTest, GivenStages_TheyComeBackInOrder) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  int64_t run = store->CreateRun(SampleRun("a")).value();
  ASSERT_TRUE(store->AddStage({.run_id = run, .attempt = -1, .stage = "seed", .seconds = 2}).ok());
  ASSERT_TRUE(
      store->AddStage({.run_id = run, .attempt = 1, .stage = "compile+evaluate", .seconds = 3.5})
          .ok());
  auto stages = store->Stages(run);
  ASSERT_TRUE(stages.ok()) << stages.status().ToString();
  ASSERT_EQ(stages->size(), 2u);
  EXPECT_EQ((*stages)[0].attempt, -1);
  EXPECT_EQ((*stages)[0].stage, "seed");
  EXPECT_DOUBLE_EQ((*stages)[0].seconds, 2.0);
  EXPECT_EQ((*stages)[1].stage, "compile+evaluate");
  EXPECT_EQ(store->AddStage({.run_id = run + 1, .stage = "x"}).code(), StatusCode::kNotFound);
}

TEST_F(RunStoreTest, GivenHostileText_ItIsStoredByteForByte) {
  auto store = OpenStore();
  ASSERT_TRUE(store);
  std::string hostile = "x'); DROP TABLE runs; --\n\"quoted\" \xc3\xa9";
  hostile += std::string("\0after-nul", 10);
  RunRow run = SampleRun(hostile);
  int64_t id = store->CreateRun(run).value();
  AttemptRow a = SampleAttempt(id, 1);
  a.source = hostile;
  store->AddAttempt(a).value();
  EXPECT_EQ(store->GetRun(id)->problem, hostile);
  EXPECT_EQ(store->GetAttempt(id, 1)->source, hostile);
  EXPECT_EQ(store->ListRuns()->size(), 1u);
}

TEST_F(RunStoreTest, GivenAReopenedDatabase_EverythingIsStillThereAndNumberingContinues) {
  int64_t run = 0;
  {
    auto store = OpenStore();
    ASSERT_TRUE(store);
    run = store->CreateRun(SampleRun("a")).value();
    store->AddAttempt(SampleAttempt(run, 1)).value();
    store->AddAttempt(SampleAttempt(run, 2)).value();
    store->AddLlmCall(SampleCall(run, 100, 10, 0.1)).value();
    ASSERT_TRUE(
        store->AddRecommendation({.run_id = run, .attempt = 1, .source = "rules", .json = "{}"})
            .ok());
    ASSERT_TRUE(store->AddStage({.run_id = run, .stage = "generate", .seconds = 1}).ok());
  }
  auto store = OpenStore();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->GetRun(run)->problem, "a");
  EXPECT_EQ(store->Attempts(run)->size(), 2u);
  EXPECT_EQ(store->LlmCalls(run)->size(), 1u);
  EXPECT_EQ(store->Recommendations(run)->size(), 1u);
  EXPECT_EQ(store->Stages(run)->size(), 1u);
  EXPECT_EQ(store->Totals(run)->input_tokens, 100);
  EXPECT_EQ(store->AddAttempt(SampleAttempt(run, 3)).value(), 3);
}

TEST_F(RunStoreTest, GivenConcurrentWriters_AttemptNumbersAreUniqueAndDense) {
  auto first = OpenStore();
  auto second = OpenStore();  // another connection, as another process would have
  ASSERT_TRUE(first && second);
  int64_t run = first->CreateRun(SampleRun("a")).value();
  constexpr int kThreads = 4, kEach = 6;
  std::vector<std::vector<int64_t>> numbers(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    RunStore* store = t % 2 ? second.get() : first.get();
    threads.emplace_back([&numbers, store, run, t] {
      for (int i = 0; i < kEach; ++i) {
        auto n = store->AddAttempt(SampleAttempt(run, t));
        numbers[t].push_back(n.ok() ? *n : -1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<int64_t> seen;
  for (const auto& list : numbers) seen.insert(list.begin(), list.end());
  EXPECT_EQ(seen.size(), size_t{kThreads * kEach});
  EXPECT_EQ(*seen.begin(), 1);
  EXPECT_EQ(*seen.rbegin(), kThreads * kEach);
}

// Schema version 2 added each call's prompt size: a version-1 store is upgraded when opened, its
// earlier calls read 0 and "", and new calls keep their sizes.
TEST_F(RunStoreTest, GivenAVersion1Store_OpenUpgradesItAndEarlierCallsHaveNoPromptSize) {
  int64_t run = 0;
  {
    auto store = OpenStore();
    ASSERT_TRUE(store);
    run = store->CreateRun(SampleRun("a")).value();
    ASSERT_TRUE(store->AddLlmCall(SampleCall(run, 1000, 200, 0.25)).ok());
  }
  for (const char* sql : {"ALTER TABLE llm_calls DROP COLUMN prompt_chars", "ALTER TABLE llm_calls DROP COLUMN prompt_tokens_estimate",
                          "ALTER TABLE llm_calls DROP COLUMN prompt_shrunk", "ALTER TABLE llm_calls DROP COLUMN details_json",
                          "ALTER TABLE attempts DROP COLUMN seconds_json", "DELETE FROM schema_version WHERE version > 1"})
    QueryDirectly(db_, sql);
  ASSERT_EQ(QueryDirectly(db_, "SELECT MAX(version) FROM schema_version"), "1");
  auto store = OpenStore();
  ASSERT_TRUE(store);
  EXPECT_EQ(QueryDirectly(db_, "SELECT MAX(version) FROM schema_version"), "3");
  ASSERT_TRUE(store->AddLlmCall(SampleCall(run, 3000, 400, 0.5)).ok());
  auto calls = store->LlmCalls(run);
  ASSERT_TRUE(calls.ok()) << calls.status().ToString();
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0].input_tokens, 1000);
  EXPECT_EQ((*calls)[0].prompt_chars, 0);
  EXPECT_EQ((*calls)[0].prompt_tokens_estimate, 0);
  EXPECT_EQ((*calls)[0].prompt_shrunk, "");
  EXPECT_EQ((*calls)[1].prompt_chars, 9000);
  EXPECT_EQ((*calls)[1].prompt_shrunk, "dropped 1 oldest memory line");
  EXPECT_EQ(QueryDirectly(db_, "PRAGMA integrity_check"), "ok");
}

TEST_F(RunStoreTest, GivenANewerSchemaVersion_OpenRefusesWithAClearMessage) {
  ASSERT_TRUE(OpenStore());
  QueryDirectly(db_, "UPDATE schema_version SET version = 9");
  auto store = RunStore::Open(db_);
  ASSERT_FALSE(store.ok());
  const std::string& msg = store.status().message();
  EXPECT_NE(msg.find(db_.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("schema version 9"), std::string::npos) << msg;
  EXPECT_NE(msg.find("upgrade kforge"), std::string::npos) << msg;
}

TEST_F(RunStoreTest, GivenAPathUnderAFile_OpenFailsNamingThePath) {
  fs::path file = dir_.path() / "not-a-folder";
  std::ofstream(file) << "x";
  fs::path db = file / ".kforge" / "runs.db";
  auto store = RunStore::Open(db);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kIoError);
  EXPECT_NE(store.status().message().find(db.string()), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("writable"), std::string::npos)
      << store.status().message();
}

TEST_F(RunStoreTest, GivenAReadOnlyFolder_OpenFailsNamingThePath) {
  if (geteuid() == 0) GTEST_SKIP() << "root writes through permission bits; needs a normal user";
  fs::path folder = dir_.path() / "locked";
  fs::create_directories(folder);
  fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec);
  auto store = RunStore::Open(folder / "runs.db");
  fs::permissions(folder, fs::perms::owner_all);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find((folder / "runs.db").string()), std::string::npos)
      << store.status().message();
}

TEST_F(RunStoreTest, GivenAFileThatIsNotADatabase_OpenFailsNamingThePath) {
  fs::create_directories(db_.parent_path());
  std::ofstream(db_) << std::string(4096, 'z');
  auto store = RunStore::Open(db_);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(db_.string()), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("not a database"), std::string::npos)
      << store.status().message();
}

// --- Crash safety -----------------------------------------------------------------------------

// What the writer child reports through its pipe after each committed write.
struct Report {
  int64_t kind;  // kRun, kAttempt, kLlmCall or kStage
  int64_t value;
};
enum : int64_t { kRun, kAttempt, kLlmCall, kStage };

void WriteReport(int fd, int64_t kind, int64_t value) {
  Report r{kind, value};
  if (write(fd, &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r))) _exit(3);
}

// The child: opens the store, takes run `run` (or creates one when 0), then writes rows until it
// is killed, reporting each write only after the store said it was committed.
[[noreturn]] void WriteUntilKilled(const fs::path& db, int64_t run, int fd) {
  auto store = RunStore::Open(db);
  if (!store.ok()) _exit(2);
  if (run == 0) {
    auto id = (*store)->CreateRun(SampleRun("crash"));
    if (!id.ok()) _exit(2);
    run = *id;
    WriteReport(fd, kRun, run);
  }
  for (int64_t i = 0;; ++i) {
    auto number = (*store)->AddAttempt(SampleAttempt(run, i));
    if (!number.ok()) _exit(2);
    WriteReport(fd, kAttempt, *number);
    auto call = (*store)->AddLlmCall(SampleCall(run, 10, 1, 0.01));
    if (!call.ok()) _exit(2);
    WriteReport(fd, kLlmCall, *call);
    if (!(*store)->AddStage({.run_id = run, .attempt = *number, .stage = "s", .seconds = 1}).ok())
      _exit(2);
    WriteReport(fd, kStage, 1);
  }
}

// Forks a writer, lets it commit at least `min_reports` writes, SIGKILLs it, and returns every
// report it managed to send.
std::vector<Report> RunAndKillWriter(const fs::path& db, int64_t run, size_t min_reports) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    WriteUntilKilled(db, run, fds[1]);
  }
  close(fds[1]);
  std::vector<Report> reports;
  bool killed = false;
  Report r;
  // Reports are 16 bytes, written atomically (< PIPE_BUF), so reads never split one.
  for (;;) {
    ssize_t n = read(fds[0], &r, sizeof(r));
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(r))) break;  // EOF: the child is gone
    reports.push_back(r);
    if (!killed && reports.size() >= min_reports) {
      kill(pid, SIGKILL);
      killed = true;
    }
  }
  close(fds[0]);
  int wstatus = 0;
  EXPECT_EQ(waitpid(pid, &wstatus, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
      << "the writer ended on its own (exit " << WEXITSTATUS(wstatus) << ") before being killed";
  return reports;
}

TEST_F(RunStoreTest, GivenAWriterKilledMidWay_EveryCommittedRowSurvivesAndTheDbIsIntact) {
  int64_t run = 0;
  std::set<int64_t> attempts, calls;
  size_t stages = 0;
  // Five writers in turn, like a run killed and resumed four times; each is killed at a different
  // point of its write loop.
  for (size_t round = 0; round < 5; ++round) {
    for (const Report& r : RunAndKillWriter(db_, run, 20 + 7 * round)) {
      if (r.kind == kRun) run = r.value;
      if (r.kind == kAttempt) attempts.insert(r.value);
      if (r.kind == kLlmCall) calls.insert(r.value);
      if (r.kind == kStage) ++stages;
    }
    ASSERT_GT(run, 0);
  }

  EXPECT_EQ(QueryDirectly(db_, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryDirectly(db_, "PRAGMA foreign_key_check"), "");
  auto store = OpenStore();
  ASSERT_TRUE(store);
  std::vector<AttemptRow> stored = store->Attempts(run).value();
  // Every reported attempt is there; at most one more per writer (committed, then killed before
  // it could report), and the numbers have no gaps.
  ASSERT_GE(stored.size(), attempts.size());
  EXPECT_LE(stored.size(), attempts.size() + 5);
  for (size_t i = 0; i < stored.size(); ++i) EXPECT_EQ(stored[i].number, int64_t(i + 1));
  std::set<int64_t> stored_calls;
  std::vector<LlmCallRow> stored_call_rows = store->LlmCalls(run).value();
  for (const LlmCallRow& c : stored_call_rows) stored_calls.insert(c.id);
  for (int64_t id : calls) EXPECT_TRUE(stored_calls.count(id)) << "lost LLM call " << id;
  EXPECT_GE(store->Stages(run)->size(), stages);
  RunTotals totals = store->Totals(run).value();
  EXPECT_EQ(totals.llm_calls, int64_t(stored_calls.size()));
  EXPECT_EQ(totals.input_tokens, 10 * totals.llm_calls);
  EXPECT_EQ(store->AddAttempt(SampleAttempt(run, 0)).value(), int64_t(stored.size() + 1));
}

}  // namespace
}  // namespace kforge
