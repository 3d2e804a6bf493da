// The `sluice` command: prepare, inspect and check datasets (docs/cli.md).
#include <CLI/CLI.hpp>
#include <string_view>

#include "cli/commands.h"
#include "cli/common.h"

namespace {

using namespace sluice::cli;

void AddConvertCommand(CLI::App* convert, int* exit_code) {
  convert->require_subcommand(1);
  AddConvertImagesCommand(convert, exit_code);
  AddConvertJsonlCommand(convert, exit_code);
  AddConvertTextCommand(convert, exit_code);
}

// The top-level commands, in the order `sluice --help` lists them.
struct Command {
  const char* name;
  const char* description;
  void (*add)(CLI::App* cmd, int* exit_code);  // its options, subcommands and callback
};
constexpr Command kCommands[] = {
    {"convert", "Convert raw data into shards", AddConvertCommand},
    {"inspect", "Show a dataset's shards, counts and schema", AddInspectCommand},
    {"verify", "Check every record CRC and index entry", AddVerifyCommand},
    {"index", "Build <FILE>.idx for existing TFRecord files", AddIndexCommand},
    {"stats", "Count records per value of a feature", AddStatsCommand},
    {"dedup", "Remove exact duplicate records", AddDedupCommand},
    {"clean", "Remove what interrupted writers left in a dataset directory", AddCleanCommand},
    {"cache", "Look after a node-local cache directory", AddCacheCommand},
    {"reshard", "Shuffle a dataset globally into new shards", AddReshardCommand},
    {"table",
     "Versioned tables: history, files, optimize, vacuum, restore, delete, append, checkpoint",
     AddTableCommand},
};

// The command the command line names: its first argument that is not an option (the top
// level has none but --help and --version). Empty when there is none.
std::string_view NamedCommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '-') return argv[i];
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sluice: convert data into compressed, indexed record shards and check them"};
  app.set_version_flag("--version", std::string("sluice ") + SLUICE_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Run 'sluice COMMAND --help' for a command's options. Exit codes: 0 done, "
      "1 error or faults found, 2 bad command line.");
  int exit_code = kExitOk;

  // Every command is listed, but only the one the command line names gets its options: CLI11
  // builds each option as it is added, and all commands' options cost every start ~1.5 ms.
  // Parsing, help and errors are the same, since the others are never parsed into.
  const std::string_view named = NamedCommand(argc, argv);
  for (const Command& command : kCommands) {
    CLI::App* cmd = app.add_subcommand(command.name, command.description);
    if (named == command.name) command.add(cmd, &exit_code);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, version or the parse error
    return code == 0 ? kExitOk : kExitUsage;
  }
  return exit_code;
}
