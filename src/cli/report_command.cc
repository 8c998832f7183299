// `kforge report <run | bench.json> [-o FILE]`: a run of the workspace's store, or a bench
// file, as one self-contained HTML page (src/report/run_report.h, bench_html.h; docs/report.md).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "base/files.h"
#include "cli/commands.h"
#include "report/bench_html.h"
#include "report/run_report.h"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ReportFlags {
  std::string target;  // a run id, or a bench JSON file
  std::string out;     // -o; "" = run-<id>.html or <bench stem>.html; "-" = stdout
};

bool IsRunId(const std::string& s) {
  return !s.empty() && s.size() < 19 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

Result<std::string> RunPage(int64_t id, const ReportAssets& assets) {
  const fs::path db = WorkspaceDir() / "runs.db";
  // Opening would create an empty store: say where none was found instead.
  if (!fs::exists(db))
    return Status::NotFound(fmt::format(
        "no run store at {} (set KFORGE_WORKSPACE, or run in the folder holding .kforge/)",
        db.string()));
  KF_ASSIGN_OR_RETURN(std::unique_ptr<RunStore> store, RunStore::Open(db));
  KF_ASSIGN_OR_RETURN(RunRecord record, LoadRunRecord(*store, id));
  return RenderRunReport(record, assets);
}

Result<std::string> BenchPage(const fs::path& file, const ReportAssets& assets) {
  KF_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  json bench = json::parse(text, nullptr, false);
  if (bench.is_discarded())
    return Status::InvalidArgument(file.string() +
                                   " is not JSON (kforge bench --json FILE writes a bench file)");
  Result<std::string> page = RenderBenchReport(bench, assets);
  if (!page.ok()) return Status::InvalidArgument(file.string() + ": " + page.status().message());
  return page;
}

// Writes the page; "-" is stdout. Prints where it went and how large it is.
Status WritePage(const std::string& out, const std::string& page) {
  if (out == "-") {
    fmt::print("{}", page);
    return Status::Ok();
  }
  KF_RETURN_IF_ERROR(WriteFileAtomic(out, page));
  fmt::print(stderr, "kforge: wrote {} ({} KiB)\n", fs::absolute(out).string(),
             (page.size() + 1023) / 1024);
  return Status::Ok();
}

int ExitFor(const Status& s) {
  return s.code() == StatusCode::kNotFound || s.code() == StatusCode::kInvalidArgument
             ? kExitUsage
             : kExitEnvironment;
}

int Report(const ReportFlags& f) {
  const bool run = IsRunId(f.target);
  if (!run && !fs::is_regular_file(f.target)) {
    fmt::print(stderr,
               "kforge report: {} is neither a run id (`kforge runs` lists them) nor a bench file "
               "(kforge bench --json FILE)\n",
               f.target);
    return kExitUsage;
  }
  Result<ReportAssets> assets = LoadReportAssets();
  if (!assets.ok()) {
    fmt::print(stderr, "kforge report: {}\n", assets.status().message());
    return kExitEnvironment;
  }
  Result<std::string> page =
      run ? RunPage(std::stoll(f.target), *assets) : BenchPage(f.target, *assets);
  if (!page.ok()) {
    fmt::print(stderr, "kforge report: {}\n", page.status().message());
    return ExitFor(page.status());
  }
  std::string out = f.out;
  if (out.empty())
    out = run ? "run-" + f.target + ".html" : fs::path(f.target).stem().string() + ".html";
  if (Status s = WritePage(out, *page); !s.ok()) {
    fmt::print(stderr, "kforge report: {}\n", s.message());
    return kExitEnvironment;
  }
  return kExitOk;
}

}  // namespace

void AddReportCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<ReportFlags>();
  CLI::App* cmd = app.add_subcommand("report",
                                     "Write a run or a bench as one self-contained HTML page "
                                     "(charts, attempts, verdicts, prompts)");
  cmd->add_option(
         "target", f->target,
         "A run id of this workspace (`kforge runs`), or a bench file (kforge bench --json FILE)")
      ->required();
  cmd->add_option("-o,--output", f->out,
                  "The HTML file (default run-<id>.html or <bench file stem>.html; - for stdout)");
  cmd->callback([f, exit_code] { *exit_code = Report(*f); });
}

}  // namespace kforge
