// kforge: turns a slow operator into a verified fast kernel. main() only dispatches.
#include <CLI/CLI.hpp>

#include "base/files.h"
#include "cli/commands.h"
#if __has_include("cli/llm_command.h")
#include "cli/llm_command.h"
#define KFORGE_HAVE_LLM 1
#endif

int main(int argc, char** argv) {
  kforge::TuneHeapForTensors();
  int exit_code = kforge::kExitOk;
  CLI::App app{"kforge: verified fast kernels for any accelerator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kforge 0.1.0");
  app.set_config("--config", "", "Read options from a TOML file: a [optimize] (or [eval], ...) table whose keys are the long flag names; command-line flags win");
  kforge::AddLoopCommands(app, &exit_code);
  kforge::AddEvalCommand(app, &exit_code);
  kforge::AddBenchCommand(app, &exit_code);
  kforge::AddReportCommand(app, &exit_code);
  kforge::AddServeCommand(app, &exit_code);
  kforge::AddProblemsCommand(app, &exit_code);
  kforge::AddDoctorCommand(app, &exit_code);
#ifdef KFORGE_HAVE_LLM
  kforge::AddLlmCommands(app, &exit_code);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kforge::kExitUsage;
  }
  return exit_code;
}
