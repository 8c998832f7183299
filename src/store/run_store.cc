// The SQLite implementation of RunStore. The schema, the pragmas and why each is set are
// described in docs/run-store.md; keep that file in step with kSchema below.
//
// Every statement is a constant string prepared with sqlite3_prepare_v2; values only ever reach
// SQLite as bound parameters. Every public write runs inside one BEGIN IMMEDIATE transaction,
// which takes the database's write lock up front, so a read-then-write (the next attempt number)
// cannot interleave with another connection's write, in this process or another.
#include "store/run_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <mutex>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Bump when the schema changes, and add the upgrade from the previous version to kUpgrades.
constexpr int64_t kSchemaVersion = 3;
constexpr int kBusyTimeoutMs = 5000;

// Version 1. Each statement runs once, in order, when the database is created. Plain CREATE
// (not IF NOT EXISTS) so that a foreign database that happens to have a `runs` table is refused
// instead of silently mixed with ours.
constexpr const char* kSchema[] = {
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  problem TEXT NOT NULL,"
    "  problem_path TEXT NOT NULL,"
    "  backend TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  stop_reason TEXT NOT NULL,"
    "  config_json TEXT NOT NULL,"
    "  created_at TEXT NOT NULL,"
    "  updated_at TEXT NOT NULL,"
    "  best_attempt INTEGER NOT NULL,"
    "  best_ms REAL NOT NULL,"
    "  seed_ms REAL NOT NULL)",
    "CREATE TABLE attempts ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  number INTEGER NOT NULL,"
    "  iteration INTEGER NOT NULL,"
    "  phase TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  parent INTEGER NOT NULL,"
    "  source TEXT NOT NULL,"
    "  extra_files_json TEXT NOT NULL,"
    "  source_hash TEXT NOT NULL,"
    "  params_json TEXT NOT NULL,"
    "  status TEXT NOT NULL,"
    "  verdict_json TEXT NOT NULL,"
    "  median_ms REAL NOT NULL,"
    "  sol_percent REAL NOT NULL,"
    "  created_at TEXT NOT NULL,"
    "  UNIQUE (run_id, number))",
    "CREATE TABLE llm_calls ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  attempt INTEGER NOT NULL,"
    "  agent TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  prompt_json TEXT NOT NULL,"
    "  response_text TEXT NOT NULL,"
    "  finish_reason TEXT NOT NULL,"
    "  input_tokens INTEGER NOT NULL,"
    "  output_tokens INTEGER NOT NULL,"
    "  cached_tokens INTEGER NOT NULL,"
    "  cost_usd REAL NOT NULL,"
    "  latency_ms REAL NOT NULL,"
    "  request_id TEXT NOT NULL,"
    "  error TEXT NOT NULL,"
    "  created_at TEXT NOT NULL)",
    "CREATE INDEX llm_calls_by_run ON llm_calls (run_id)",
    "CREATE TABLE recommendations ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  attempt INTEGER NOT NULL,"
    "  source TEXT NOT NULL,"
    "  json TEXT NOT NULL,"
    "  created_at TEXT NOT NULL)",
    "CREATE INDEX recommendations_by_run ON recommendations (run_id)",
    "CREATE TABLE stages ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id),"
    "  attempt INTEGER NOT NULL,"
    "  stage TEXT NOT NULL,"
    "  seconds REAL NOT NULL,"
    "  created_at TEXT NOT NULL)",
    "CREATE INDEX stages_by_run ON stages (run_id)",
};

// Upgrades: kUpgrades[i] takes a store from version i + 1 to i + 2. A new store is made at
// version 1 (kSchema) and upgraded like an old one, so there is one definition of each column.
// ADD COLUMN with a default fills the rows written before; older kforge versions refuse the
// upgraded store (its version is newer than they know).
struct Upgrade {
  std::vector<const char*> statements;
};
const Upgrade kUpgrades[] = {
    // Version 2: each call's prompt size (chars, kforge's token estimate) and what was cut to fit,
    // and how its answer came (streamed, first token, server time, estimated usage).
    {{"ALTER TABLE llm_calls ADD COLUMN prompt_chars INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE llm_calls ADD COLUMN prompt_tokens_estimate INTEGER NOT NULL DEFAULT 0",
      "ALTER TABLE llm_calls ADD COLUMN prompt_shrunk TEXT NOT NULL DEFAULT ''",
      "ALTER TABLE llm_calls ADD COLUMN details_json TEXT NOT NULL DEFAULT '{}'"}},
    // Version 3: where each attempt's time went (queue, compile, check, time, evaluate).
    {{"ALTER TABLE attempts ADD COLUMN seconds_json TEXT NOT NULL DEFAULT '{}'"}},
};
static_assert(std::size(kUpgrades) == kSchemaVersion - 1, "one upgrade per version after the first");

// Covering indexes for Totals, which the loop runs after every step: without them SQLite reads
// every row's prompt and source (the summed columns sit behind them, on overflow pages), 5.7 ms
// at 1000 model calls. Created on every open (IF NOT EXISTS), so stores made before have them
// too; older kforge versions read a store that has them.
const char* const kIndexes[] = {
    "CREATE INDEX IF NOT EXISTS llm_calls_totals ON llm_calls "
    "(run_id, input_tokens, output_tokens, cached_tokens, cost_usd)",
    "CREATE INDEX IF NOT EXISTS attempts_status ON attempts (run_id, status)",
};

// The current time as ISO 8601 UTC with milliseconds: 2025-01-31T12:34:56.789Z.
std::string NowUtc() {
  using namespace std::chrono;
  int64_t ms = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03d}Z", text, static_cast<int>(ms % 1000));
}

// One prepared statement, finalized when it goes out of scope. Bind* fill the parameters in
// order (?1, ?2, ...); the first failure (in preparing or binding) is kept and returned by
// Step(), so callers check once.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& BindInt(int64_t v) { return Keep(sqlite3_bind_int64(stmt_, ++next_, v)); }
  Statement& BindReal(double v) { return Keep(sqlite3_bind_double(stmt_, ++next_, v)); }
  // Strings are bound with their length, so embedded NUL bytes survive.
  Statement& BindText(const std::string& v) {
    return Keep(
        sqlite3_bind_text64(stmt_, ++next_, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return rc_ != SQLITE_OK ? rc_ : sqlite3_step(stmt_); }

  int64_t Int(int column) { return sqlite3_column_int64(stmt_, column); }
  double Real(int column) { return sqlite3_column_double(stmt_, column); }
  std::string Text(int column) {
    const void* bytes = sqlite3_column_blob(stmt_, column);
    int size = sqlite3_column_bytes(stmt_, column);
    return bytes ? std::string(static_cast<const char*>(bytes), size) : std::string();
  }

 private:
  Statement& Keep(int rc) {
    if (rc_ == SQLITE_OK) rc_ = rc;
    return *this;
  }
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
  int next_ = 0;
};

// Column order of every `SELECT ... FROM runs`.
RunRow ReadRun(Statement& s) {
  RunRow r;
  r.id = s.Int(0);
  r.problem = s.Text(1);
  r.problem_path = s.Text(2);
  r.backend = s.Text(3);
  r.model = s.Text(4);
  r.status = s.Text(5);
  r.stop_reason = s.Text(6);
  r.config_json = s.Text(7);
  r.created_at = s.Text(8);
  r.updated_at = s.Text(9);
  r.best_attempt = s.Int(10);
  r.best_ms = s.Real(11);
  r.seed_ms = s.Real(12);
  return r;
}

// Column order of every `SELECT ... FROM attempts`.
AttemptRow ReadAttempt(Statement& s) {
  AttemptRow a;
  a.run_id = s.Int(0);
  a.number = s.Int(1);
  a.iteration = s.Int(2);
  a.phase = s.Text(3);
  a.state = s.Text(4);
  a.parent = s.Int(5);
  a.source = s.Text(6);
  a.extra_files_json = s.Text(7);
  a.source_hash = s.Text(8);
  a.params_json = s.Text(9);
  a.status = s.Text(10);
  a.verdict_json = s.Text(11);
  a.median_ms = s.Real(12);
  a.sol_percent = s.Real(13);
  a.created_at = s.Text(14);
  a.seconds_json = s.Text(15);
  return a;
}

LlmCallRow ReadLlmCall(Statement& s) {
  LlmCallRow c;
  c.id = s.Int(0);
  c.run_id = s.Int(1);
  c.attempt = s.Int(2);
  c.agent = s.Text(3);
  c.model = s.Text(4);
  c.prompt_json = s.Text(5);
  c.response_text = s.Text(6);
  c.finish_reason = s.Text(7);
  c.input_tokens = s.Int(8);
  c.output_tokens = s.Int(9);
  c.cached_tokens = s.Int(10);
  c.cost_usd = s.Real(11);
  c.latency_ms = s.Real(12);
  c.request_id = s.Text(13);
  c.error = s.Text(14);
  c.created_at = s.Text(15);
  c.prompt_chars = s.Int(16);
  c.prompt_tokens_estimate = s.Int(17);
  c.prompt_shrunk = s.Text(18);
  c.details_json = s.Text(19);
  return c;
}

class SqliteRunStore final : public RunStore {
 public:
  SqliteRunStore(sqlite3* db, fs::path path) : db_(db), path_(std::move(path)) {}
  ~SqliteRunStore() override { sqlite3_close_v2(db_); }

  // Sets the connection's pragmas and creates or checks the schema.
  Status Init();

  Result<int64_t> CreateRun(const RunRow& run) override;
  Status UpdateRun(const RunRow& run) override;
  Result<RunRow> GetRun(int64_t id) override;
  Result<std::vector<RunRow>> ListRuns() override;
  Result<int64_t> AddAttempt(const AttemptRow& attempt) override;
  Status UpdateAttempt(const AttemptRow& attempt) override;
  Result<std::vector<AttemptRow>> Attempts(int64_t run_id) override;
  Result<AttemptRow> GetAttempt(int64_t run_id, int64_t number) override;
  Result<int64_t> AddLlmCall(const LlmCallRow& call) override;
  Result<std::vector<LlmCallRow>> LlmCalls(int64_t run_id) override;
  Status AddRecommendation(const RecommendationRow& rec) override;
  Result<std::vector<RecommendationRow>> Recommendations(int64_t run_id) override;
  Status AddStage(const StageRow& stage) override;
  Result<std::vector<StageRow>> Stages(int64_t run_id) override;
  Result<RunTotals> Totals(int64_t run_id) override;

 private:
  // The Status for a failed SQLite call: SQLite's message, what we were doing, and the path.
  // A foreign-key failure names the missing run (`run_id`) instead.
  Status Error(std::string_view doing, int64_t run_id = -1) const;
  Status NoRun(int64_t id) const;
  // Runs one statement that has no parameters and returns no rows we need.
  Status Exec(const char* sql, std::string_view doing);
  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT; rolls back if it or the commit fails.
  // REQUIRES: mu_ held.
  // `durable`: the commit is flushed to disk (synchronous=FULL for it), and with it every commit
  // before it in the log; other writes are synchronous=NORMAL (docs/run-store.md).
  Status WriteTransaction(std::string_view doing, const std::function<Status()>& body, bool durable = false);
  Status CreateSchema();
  Status CheckSchema();
  Status RecordVersion(int64_t version);
  Status UpgradeFrom(int64_t version);
  Result<double> WallSeconds(int64_t run_id);
  Result<bool> RunExists(int64_t id);

  std::mutex mu_;
  sqlite3* const db_;
  const fs::path path_;
};

Status SqliteRunStore::Error(std::string_view doing, int64_t run_id) const {
  int code = sqlite3_extended_errcode(db_);
  if (code == SQLITE_CONSTRAINT_FOREIGNKEY && run_id >= 0) return NoRun(run_id);
  std::string msg = fmt::format("run store {}: {}: {}", path_.string(), doing, sqlite3_errmsg(db_));
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(msg + " (another kforge process holds the database; retry)");
    case SQLITE_CONSTRAINT:
      return Status::InvalidArgument(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::IoError(msg + " (not a usable kforge run store; move it aside)");
    default:
      return Status::IoError(msg);
  }
}

Status SqliteRunStore::NoRun(int64_t id) const {
  return Status::NotFound(
      fmt::format("no run {} in {}; `kforge runs` lists them", id, path_.string()));
}

Status SqliteRunStore::Exec(const char* sql, std::string_view doing) {
  Statement s(db_, sql);
  int rc = s.Step();
  while (rc == SQLITE_ROW) rc = s.Step();
  return rc == SQLITE_DONE ? Status::Ok() : Error(doing);
}

Status SqliteRunStore::WriteTransaction(std::string_view doing,
                                        const std::function<Status()>& body, bool durable) {
  if (durable) KF_RETURN_IF_ERROR(Exec("PRAGMA synchronous = FULL", doing));
  Status status = Exec("BEGIN IMMEDIATE", doing);
  if (status.ok()) status = body();
  if (status.ok()) status = Exec("COMMIT", doing);
  // A failed statement or COMMIT may leave the transaction open; never leave it dangling.
  if (!sqlite3_get_autocommit(db_)) Exec("ROLLBACK", doing);
  if (durable) {
    Status back = Exec("PRAGMA synchronous = NORMAL", doing);
    if (status.ok()) status = back;
  }
  return status;
}

Status SqliteRunStore::Init() {
  // Set first: switching to WAL itself may have to wait for another process's lock.
  if (sqlite3_busy_timeout(db_, kBusyTimeoutMs) != SQLITE_OK) return Error("setting busy_timeout");
  {
    Statement s(db_, "PRAGMA journal_mode = WAL");
    if (s.Step() != SQLITE_ROW) return Error("setting journal_mode=WAL");
    std::string mode = s.Text(0);
    if (mode != "wal") {
      return Status::Unavailable(fmt::format(
          "run store {}: the file system refused write-ahead logging (journal_mode is {}); put "
          "the workspace on a local disk",
          path_.string(), mode));
    }
  }
  // NORMAL: in WAL mode a commit is then not flushed to disk before it returns. A killed process
  // loses nothing (the log is in the kernel's page cache); a power loss may roll back the
  // newest commits, never corrupt. Run rows (CreateRun, UpdateRun) and model calls (money
  // spent) commit with FULL, which flushes the log with every commit before them. Each fsync cost 3 to 4 ms on this VM, about
  // 11 per optimization pass (kforge_loop_overhead_bench).
  KF_RETURN_IF_ERROR(Exec("PRAGMA synchronous = NORMAL", "setting synchronous=NORMAL"));
  KF_RETURN_IF_ERROR(Exec("PRAGMA foreign_keys = ON", "setting foreign_keys=ON"));
  return WriteTransaction("creating the schema", [this]() -> Status {
    Statement s(db_,
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND "
                "name = 'schema_version'");
    if (s.Step() != SQLITE_ROW) return Error("reading the schema");
    KF_RETURN_IF_ERROR(s.Int(0) == 0 ? CreateSchema() : CheckSchema());
    for (const char* sql : kIndexes) KF_RETURN_IF_ERROR(Exec(sql, "creating the indexes"));
    return Status::Ok();
  });
}

Status SqliteRunStore::CreateSchema() {
  for (const char* sql : kSchema) KF_RETURN_IF_ERROR(Exec(sql, "creating the schema"));
  KF_RETURN_IF_ERROR(RecordVersion(1));
  return UpgradeFrom(1);
}

Status SqliteRunStore::RecordVersion(int64_t version) {
  Statement s(db_, "INSERT INTO schema_version (version) VALUES (?1)");
  s.BindInt(version);
  return s.Step() == SQLITE_DONE ? Status::Ok() : Error("recording the schema version");
}

// Runs inside Init's transaction: an upgrade is applied whole or not at all.
Status SqliteRunStore::UpgradeFrom(int64_t version) {
  for (int64_t v = version; v < kSchemaVersion; ++v) {
    for (const char* sql : kUpgrades[v - 1].statements)
      KF_RETURN_IF_ERROR(Exec(sql, fmt::format("upgrading the schema to version {}", v + 1)));
    KF_RETURN_IF_ERROR(RecordVersion(v + 1));
  }
  return Status::Ok();
}

Status SqliteRunStore::CheckSchema() {
  int64_t version = 0;
  {  // finalized before an upgrade alters tables
    Statement s(db_, "SELECT MAX(version) FROM schema_version");
    if (s.Step() != SQLITE_ROW) return Error("reading the schema version");
    version = s.Int(0);
  }
  if (version > kSchemaVersion) {
    return Status::Unavailable(
        fmt::format("run store {} has schema version {}, newer than this kforge understands ({}); "
                    "upgrade kforge to read it",
                    path_.string(), version, kSchemaVersion));
  }
  if (version < 1) {
    return Status::IoError(
        fmt::format("run store {} has no valid schema version ({}); it is damaged or not kforge's",
                    path_.string(), version));
  }
  return UpgradeFrom(version);
}

Result<bool> SqliteRunStore::RunExists(int64_t id) {
  Statement s(db_, "SELECT COUNT(*) FROM runs WHERE id = ?1");
  s.BindInt(id);
  if (s.Step() != SQLITE_ROW) return Error("looking up a run");
  return s.Int(0) > 0;
}

Result<int64_t> SqliteRunStore::CreateRun(const RunRow& run) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t id = 0;
  KF_RETURN_IF_ERROR(WriteTransaction("creating a run", [&]() -> Status {
    std::string now = NowUtc();
    Statement s(db_,
                "INSERT INTO runs (problem, problem_path, backend, model, status, stop_reason, "
                "config_json, created_at, updated_at, best_attempt, best_ms, seed_ms) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    s.BindText(run.problem).BindText(run.problem_path).BindText(run.backend).BindText(run.model);
    s.BindText(run.status).BindText(run.stop_reason).BindText(run.config_json);
    s.BindText(now).BindText(now).BindInt(run.best_attempt).BindReal(run.best_ms);
    s.BindReal(run.seed_ms);
    if (s.Step() != SQLITE_DONE) return Error("creating a run");
    id = sqlite3_last_insert_rowid(db_);
    return Status::Ok();
  }, /*durable=*/true));
  return id;
}

Status SqliteRunStore::UpdateRun(const RunRow& run) {
  std::lock_guard<std::mutex> lock(mu_);
  return WriteTransaction("updating a run", [&]() -> Status {
    Statement s(db_,
                "UPDATE runs SET problem = ?1, problem_path = ?2, backend = ?3, model = ?4, "
                "status = ?5, stop_reason = ?6, config_json = ?7, updated_at = ?8, "
                "best_attempt = ?9, best_ms = ?10, seed_ms = ?11 WHERE id = ?12");
    s.BindText(run.problem).BindText(run.problem_path).BindText(run.backend).BindText(run.model);
    s.BindText(run.status).BindText(run.stop_reason).BindText(run.config_json);
    s.BindText(NowUtc()).BindInt(run.best_attempt).BindReal(run.best_ms).BindReal(run.seed_ms);
    s.BindInt(run.id);
    if (s.Step() != SQLITE_DONE) return Error("updating a run");
    return sqlite3_changes(db_) == 0 ? NoRun(run.id) : Status::Ok();
  }, /*durable=*/true);
}

Result<RunRow> SqliteRunStore::GetRun(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_,
              "SELECT id, problem, problem_path, backend, model, status, stop_reason, "
              "config_json, created_at, updated_at, best_attempt, best_ms, seed_ms "
              "FROM runs WHERE id = ?1");
  s.BindInt(id);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return NoRun(id);
  if (rc != SQLITE_ROW) return Error("reading a run");
  return ReadRun(s);
}

Result<std::vector<RunRow>> SqliteRunStore::ListRuns() {
  std::lock_guard<std::mutex> lock(mu_);
  // Ids only grow (AUTOINCREMENT), so the highest id is the newest run even when two runs were
  // created within the same millisecond.
  Statement s(db_,
              "SELECT id, problem, problem_path, backend, model, status, stop_reason, "
              "config_json, created_at, updated_at, best_attempt, best_ms, seed_ms "
              "FROM runs ORDER BY id DESC");
  std::vector<RunRow> runs;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) runs.push_back(ReadRun(s));
  if (rc != SQLITE_DONE) return Error("listing runs");
  return runs;
}

Result<int64_t> SqliteRunStore::AddAttempt(const AttemptRow& a) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t number = 0;
  KF_RETURN_IF_ERROR(WriteTransaction("adding an attempt", [&]() -> Status {
    // Inside the IMMEDIATE transaction nobody else can insert between this read and the write.
    Statement next(db_, "SELECT COALESCE(MAX(number), 0) + 1 FROM attempts WHERE run_id = ?1");
    next.BindInt(a.run_id);
    if (next.Step() != SQLITE_ROW) return Error("numbering an attempt");
    number = next.Int(0);
    Statement s(db_,
                "INSERT INTO attempts (run_id, number, iteration, phase, state, parent, source, "
                "extra_files_json, source_hash, params_json, status, verdict_json, median_ms, "
                "sol_percent, created_at, seconds_json) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
    s.BindInt(a.run_id).BindInt(number).BindInt(a.iteration).BindText(a.phase);
    s.BindText(a.state).BindInt(a.parent).BindText(a.source).BindText(a.extra_files_json);
    s.BindText(a.source_hash).BindText(a.params_json).BindText(a.status);
    s.BindText(a.verdict_json).BindReal(a.median_ms).BindReal(a.sol_percent).BindText(NowUtc());
    s.BindText(a.seconds_json.empty() ? "{}" : a.seconds_json);
    return s.Step() == SQLITE_DONE ? Status::Ok() : Error("adding an attempt", a.run_id);
  }));
  return number;
}

Status SqliteRunStore::UpdateAttempt(const AttemptRow& a) {
  std::lock_guard<std::mutex> lock(mu_);
  return WriteTransaction("updating an attempt", [&]() -> Status {
    Statement s(db_,
                "UPDATE attempts SET state = ?1, status = ?2, verdict_json = ?3, median_ms = ?4, "
                "sol_percent = ?5, source = ?6, extra_files_json = ?7, source_hash = ?8, "
                "params_json = ?9, seconds_json = ?10 WHERE run_id = ?11 AND number = ?12");
    s.BindText(a.state).BindText(a.status).BindText(a.verdict_json).BindReal(a.median_ms);
    s.BindReal(a.sol_percent).BindText(a.source).BindText(a.extra_files_json);
    s.BindText(a.source_hash).BindText(a.params_json).BindText(a.seconds_json.empty() ? "{}" : a.seconds_json);
    s.BindInt(a.run_id).BindInt(a.number);
    if (s.Step() != SQLITE_DONE) return Error("updating an attempt");
    if (sqlite3_changes(db_) > 0) return Status::Ok();
    return Status::NotFound(
        fmt::format("no attempt {} of run {} in {}", a.number, a.run_id, path_.string()));
  });
}

Result<std::vector<AttemptRow>> SqliteRunStore::Attempts(int64_t run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_,
              "SELECT run_id, number, iteration, phase, state, parent, source, extra_files_json, "
              "source_hash, params_json, status, verdict_json, median_ms, sol_percent, "
              "created_at, seconds_json FROM attempts WHERE run_id = ?1 ORDER BY number");
  s.BindInt(run_id);
  std::vector<AttemptRow> attempts;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) attempts.push_back(ReadAttempt(s));
  if (rc != SQLITE_DONE) return Error("listing attempts");
  return attempts;
}

Result<AttemptRow> SqliteRunStore::GetAttempt(int64_t run_id, int64_t number) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_,
              "SELECT run_id, number, iteration, phase, state, parent, source, extra_files_json, "
              "source_hash, params_json, status, verdict_json, median_ms, sol_percent, "
              "created_at, seconds_json FROM attempts WHERE run_id = ?1 AND number = ?2");
  s.BindInt(run_id).BindInt(number);
  int rc = s.Step();
  if (rc == SQLITE_ROW) return ReadAttempt(s);
  if (rc != SQLITE_DONE) return Error("reading an attempt");
  KF_ASSIGN_OR_RETURN(bool run_exists, RunExists(run_id));
  if (!run_exists) return NoRun(run_id);
  return Status::NotFound(
      fmt::format("no attempt {} of run {} in {}", number, run_id, path_.string()));
}

Result<int64_t> SqliteRunStore::AddLlmCall(const LlmCallRow& c) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t id = 0;
  KF_RETURN_IF_ERROR(WriteTransaction("recording an LLM call", [&]() -> Status {
    Statement s(db_,
                "INSERT INTO llm_calls (run_id, attempt, agent, model, prompt_json, "
                "response_text, finish_reason, input_tokens, output_tokens, cached_tokens, "
                "cost_usd, latency_ms, request_id, error, created_at, prompt_chars, "
                "prompt_tokens_estimate, prompt_shrunk, details_json) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
                "?18, ?19)");
    s.BindInt(c.run_id).BindInt(c.attempt).BindText(c.agent).BindText(c.model);
    s.BindText(c.prompt_json).BindText(c.response_text).BindText(c.finish_reason);
    s.BindInt(c.input_tokens).BindInt(c.output_tokens).BindInt(c.cached_tokens);
    s.BindReal(c.cost_usd).BindReal(c.latency_ms).BindText(c.request_id).BindText(c.error);
    s.BindText(NowUtc()).BindInt(c.prompt_chars).BindInt(c.prompt_tokens_estimate);
    s.BindText(c.prompt_shrunk).BindText(c.details_json.empty() ? "{}" : c.details_json);
    if (s.Step() != SQLITE_DONE) return Error("recording an LLM call", c.run_id);
    id = sqlite3_last_insert_rowid(db_);
    return Status::Ok();
  }, /*durable=*/true));
  return id;
}

Result<std::vector<LlmCallRow>> SqliteRunStore::LlmCalls(int64_t run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_,
              "SELECT id, run_id, attempt, agent, model, prompt_json, response_text, "
              "finish_reason, input_tokens, output_tokens, cached_tokens, cost_usd, latency_ms, "
              "request_id, error, created_at, prompt_chars, prompt_tokens_estimate, prompt_shrunk, "
              "details_json FROM llm_calls WHERE run_id = ?1 ORDER BY id");
  s.BindInt(run_id);
  std::vector<LlmCallRow> calls;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) calls.push_back(ReadLlmCall(s));
  if (rc != SQLITE_DONE) return Error("listing LLM calls");
  return calls;
}

Status SqliteRunStore::AddRecommendation(const RecommendationRow& rec) {
  std::lock_guard<std::mutex> lock(mu_);
  return WriteTransaction("recording a recommendation", [&]() -> Status {
    Statement s(db_,
                "INSERT INTO recommendations (run_id, attempt, source, json, created_at) "
                "VALUES (?1, ?2, ?3, ?4, ?5)");
    s.BindInt(rec.run_id).BindInt(rec.attempt).BindText(rec.source).BindText(rec.json);
    s.BindText(NowUtc());
    if (s.Step() == SQLITE_DONE) return Status::Ok();
    return Error("recording a recommendation", rec.run_id);
  });
}

Result<std::vector<RecommendationRow>> SqliteRunStore::Recommendations(int64_t run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_,
              "SELECT run_id, attempt, source, json FROM recommendations WHERE run_id = ?1 "
              "ORDER BY id");
  s.BindInt(run_id);
  std::vector<RecommendationRow> recs;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    recs.push_back(
        {.run_id = s.Int(0), .attempt = s.Int(1), .source = s.Text(2), .json = s.Text(3)});
  }
  if (rc != SQLITE_DONE) return Error("listing recommendations");
  return recs;
}

Status SqliteRunStore::AddStage(const StageRow& stage) {
  std::lock_guard<std::mutex> lock(mu_);
  return WriteTransaction("recording a stage", [&]() -> Status {
    Statement s(db_,
                "INSERT INTO stages (run_id, attempt, stage, seconds, created_at) "
                "VALUES (?1, ?2, ?3, ?4, ?5)");
    s.BindInt(stage.run_id).BindInt(stage.attempt).BindText(stage.stage);
    s.BindReal(stage.seconds).BindText(NowUtc());
    if (s.Step() == SQLITE_DONE) return Status::Ok();
    return Error("recording a stage", stage.run_id);
  });
}

Result<std::vector<StageRow>> SqliteRunStore::Stages(int64_t run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  Statement s(db_,
              "SELECT run_id, attempt, stage, seconds FROM stages WHERE run_id = ?1 ORDER BY id");
  s.BindInt(run_id);
  std::vector<StageRow> stages;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    stages.push_back(
        {.run_id = s.Int(0), .attempt = s.Int(1), .stage = s.Text(2), .seconds = s.Real(3)});
  }
  if (rc != SQLITE_DONE) return Error("listing stages");
  return stages;
}

Result<RunTotals> SqliteRunStore::Totals(int64_t run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  // One statement, so all the sums come from the same snapshot of the database.
  Statement s(db_,
              "SELECT r.n, a.n, a.correct, l.n, l.input, l.output, l.cached, l.cost, st.seconds, "
              "l.failed "
              "FROM (SELECT COUNT(*) AS n FROM runs WHERE id = ?1) AS r, "
              "(SELECT COUNT(*) AS n, COALESCE(SUM(status = 'correct'), 0) AS correct "
              "   FROM attempts WHERE run_id = ?1) AS a, "
              "(SELECT COALESCE(SUM(error = ''), 0) AS n, COALESCE(SUM(error != ''), 0) AS failed, "
              "   COALESCE(SUM(input_tokens), 0) AS input, "
              "   COALESCE(SUM(output_tokens), 0) AS output, "
              "   COALESCE(SUM(cached_tokens), 0) AS cached, TOTAL(cost_usd) AS cost "
              "   FROM llm_calls WHERE run_id = ?1) AS l, "
              "(SELECT TOTAL(seconds) AS seconds FROM stages WHERE run_id = ?1) AS st");
  s.BindInt(run_id);
  if (s.Step() != SQLITE_ROW) return Error("adding up a run");
  if (s.Int(0) == 0) return NoRun(run_id);
  RunTotals t;
  t.attempts = s.Int(1);
  t.correct = s.Int(2);
  t.llm_calls = s.Int(3);
  t.input_tokens = s.Int(4);
  t.output_tokens = s.Int(5);
  t.cached_tokens = s.Int(6);
  t.cost_usd = s.Real(7);
  t.stage_seconds = s.Real(8);
  t.failed_llm_calls = s.Int(9);
  KF_ASSIGN_OR_RETURN(t.wall_seconds, WallSeconds(run_id));
  return t;
}

// A stage row is written when its stage ends: it covers [created_at - seconds, created_at].
// Parallel stages (candidates generated at once) overlap; their union is the run's time.
Result<double> SqliteRunStore::WallSeconds(int64_t run_id) {
  Statement s(db_,
              "SELECT julianday(created_at) * 86400.0 - seconds AS start, "
              "julianday(created_at) * 86400.0 AS end FROM stages WHERE run_id = ?1 "
              "ORDER BY start");
  s.BindInt(run_id);
  double total = 0, open_start = 0, open_end = 0;
  bool open = false;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    double start = s.Real(0), end = s.Real(1);
    if (open && start <= open_end) {
      open_end = std::max(open_end, end);
      continue;
    }
    if (open) total += open_end - open_start;
    open_start = start, open_end = end, open = true;
  }
  if (rc != SQLITE_DONE) return Error("adding up a run's time");
  if (open) total += open_end - open_start;
  return total;
}

// Creates the folder that will hold `db`, with a message that says what to do on failure.
Status MakeParentFolder(const fs::path& db) {
  fs::path folder = db.parent_path();
  if (folder.empty()) return Status::Ok();
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (!ec) return Status::Ok();
  return Status::IoError(
      fmt::format("cannot create {} for the run store {}: {}; run kforge in a writable "
                  "workspace",
                  folder.string(), db.string(), ec.message()));
}

}  // namespace

Result<std::unique_ptr<RunStore>> RunStore::Open(const fs::path& db) {
  KF_RETURN_IF_ERROR(MakeParentFolder(db));
  sqlite3* handle = nullptr;
  // NOMUTEX: the store serializes its own calls, so SQLite's per-connection mutex is redundant.
  int rc =
      sqlite3_open_v2(db.c_str(), &handle,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = handle ? sqlite3_errmsg(handle) : sqlite3_errstr(rc);
    sqlite3_close_v2(handle);
    return Status::IoError(
        fmt::format("cannot open the run store {}: {}; check that the folder "
                    "is writable",
                    db.string(), why));
  }
  // SQLite quietly falls back to read-only when the file is not writable; writes would then
  // fail later, far from the cause.
  if (sqlite3_db_readonly(handle, "main") == 1) {
    sqlite3_close_v2(handle);
    return Status::IoError(
        fmt::format("the run store {} is read-only; fix its permissions or use another workspace",
                    db.string()));
  }
  auto store = std::make_unique<SqliteRunStore>(handle, db);
  KF_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<RunStore>(std::move(store));
}

}  // namespace kforge
