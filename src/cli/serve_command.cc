// `kforge serve [--port N]`: a read-only live page of the workspace on 127.0.0.1: its runs and
// benches, updating while they progress, each linking to its report (docs/report.md, "Live
// page"). cpp-httplib (Debian's libcpp-httplib) serves it.
#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "base/files.h"
#include "cli/commands.h"
#include "report/bench_html.h"
#include "report/live_status.h"
#include "report/run_report.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ServeFlags {
  std::string host = "127.0.0.1";
  int port = 8765;
  bool allow_remote = false;
};

// The page shows every run's prompts, answers and sources: it stays on this machine unless asked.
bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// The workspace's store, opened once it exists: opening would create an empty one, and a serve
// started before the first run must not leave a .kforge/ behind.
class LazyStore {
 public:
  RunStore* Get() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!store_ && fs::exists(WorkspaceDir() / "runs.db")) {
      Result<std::unique_ptr<RunStore>> s = RunStore::Open(WorkspaceDir() / "runs.db");
      if (s.ok()) store_ = std::move(*s);
    }
    return store_.get();
  }

 private:
  std::mutex mu_;
  std::unique_ptr<RunStore> store_;
};

// How long /api/status?since=V waits for a change before it answers with the same state.
constexpr auto kLongPoll = std::chrono::seconds(2);
constexpr auto kLongPollStep = std::chrono::milliseconds(250);

void Html(httplib::Response& res, const std::string& page) {
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(page, "text/html; charset=utf-8");
}

void NotFound(httplib::Response& res, const std::string& what) {
  res.status = 404;
  res.set_content(what + "\n", "text/plain; charset=utf-8");
}

void Routes(httplib::Server& server, LazyStore& store, const ReportAssets& assets,
            const std::vector<fs::path>& bench_dirs) {
  server.Get("/", [](const httplib::Request&, httplib::Response& res) { Html(res, LivePage()); });
  server.Get("/api/status",
             [&store, bench_dirs](const httplib::Request& req, httplib::Response& res) {
               const std::string since = req.has_param("since") ? req.get_param_value("since") : "";
               const auto deadline = std::chrono::steady_clock::now() + kLongPoll;
               json status = WorkspaceStatus(store.Get(), bench_dirs);
               while (status["version"] == since && std::chrono::steady_clock::now() < deadline) {
                 std::this_thread::sleep_for(kLongPollStep);
                 status = WorkspaceStatus(store.Get(), bench_dirs);
               }
               res.set_header("Cache-Control", "no-store");
               res.set_content(status.dump(-1, ' ', false, json::error_handler_t::replace),
                               "application/json");
             });
  server.Get(
      R"(/run/(\d{1,18}))", [&store, &assets](const httplib::Request& req, httplib::Response& res) {
        RunStore* s = store.Get();
        Result<RunRecord> record = s ? LoadRunRecord(*s, std::stoll(req.matches[1].str()))
                                     : Result<RunRecord>(Status::NotFound("no run store yet"));
        if (!record.ok()) return NotFound(res, record.status().message());
        Html(res, RenderRunReport(*record, assets));
      });
  server.Get(R"(/bench/([^/]+))",
             [&assets, bench_dirs](const httplib::Request& req, httplib::Response& res) {
               const fs::path file = FindBenchFile(bench_dirs, req.matches[1].str());
               if (file.empty()) return NotFound(res, "no such bench file");
               Result<std::string> text = ReadFile(file);
               Result<std::string> page =
                   text.ok() ? RenderBenchReport(json::parse(*text, nullptr, false), assets)
                             : Result<std::string>(text.status());
               if (!page.ok()) return NotFound(res, page.status().message());
               Html(res, *page);
             });
}

int Serve(const ServeFlags& f) {
  if (!IsLoopback(f.host) && !f.allow_remote) {
    fmt::print(
        stderr,
        "kforge serve: {} is not a loopback address; the page shows every run's prompts, "
        "answers and kernels to whoever reaches it. Pass --allow-remote to serve it there anyway\n",
        f.host);
    return kExitUsage;
  }
  Result<ReportAssets> assets = LoadReportAssets();
  if (!assets.ok()) {
    fmt::print(stderr, "kforge serve: {}\n", assets.status().message());
    return kExitEnvironment;
  }
  LazyStore store;
  const std::vector<fs::path> bench_dirs = {fs::current_path(), WorkspaceDir()};
  httplib::Server server;
  Routes(server, store, *assets, bench_dirs);
  const int port = f.port == 0 ? server.bind_to_any_port(f.host)
                               : (server.bind_to_port(f.host, f.port) ? f.port : -1);
  if (port <= 0) {
    fmt::print(stderr, "kforge serve: cannot listen on {}:{} (in use? --port 0 picks a free one)\n",
               f.host, f.port);
    return kExitEnvironment;
  }
  fmt::print("kforge serve: http://{}:{}/ (read-only; Ctrl-C stops it)\n",
             f.host.find(':') != std::string::npos ? "[" + f.host + "]" : f.host, port);
  std::fflush(stdout);
  return server.listen_after_bind() ? kExitOk : kExitEnvironment;
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "A live read-only page of this workspace's runs and benches, with their reports");
  cmd->add_option("--port", f->port, "Port (default 8765; 0 picks a free one and prints it)");
  cmd->add_option("--host", f->host, "Address to listen on (default 127.0.0.1)");
  cmd->add_flag("--allow-remote", f->allow_remote,
                "Allow a --host that is not a loopback address (the page shows prompts, answers "
                "and kernels)");
  cmd->callback([f, exit_code] { *exit_code = Serve(*f); });
}

}  // namespace kforge
