// The `sluice` command: prepare, inspect and check datasets (docs/cli.md).
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/common.h"

int main(int argc, char** argv) {
  using namespace sluice::cli;
  CLI::App app{"sluice: convert data into compressed, indexed record shards and check them"};
  app.set_version_flag("--version", std::string("sluice ") + SLUICE_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Run 'sluice COMMAND --help' for a command's options. Exit codes: 0 done, "
      "1 error or faults found, 2 bad command line.");
  int exit_code = kExitOk;

  CLI::App* convert = app.add_subcommand("convert", "Convert raw data into shards");
  convert->require_subcommand(1);
  AddConvertImagesCommand(convert, &exit_code);
  AddConvertJsonlCommand(convert, &exit_code);
  AddConvertTextCommand(convert, &exit_code);
  AddInspectCommand(&app, &exit_code);
  AddVerifyCommand(&app, &exit_code);
  AddIndexCommand(&app, &exit_code);
  AddStatsCommand(&app, &exit_code);
  AddDedupCommand(&app, &exit_code);
  AddCleanCommand(&app, &exit_code);
  AddCacheCommand(&app, &exit_code);
  AddReshardCommand(&app, &exit_code);
  AddTableCommand(&app, &exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, version or the parse error
    return code == 0 ? kExitOk : kExitUsage;
  }
  return exit_code;
}
