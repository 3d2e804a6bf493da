// The subcommands of `sluice`, one file each. main.cc lists the top-level commands with their
// one-line descriptions; each Add*Command adds to its command (created by main.cc, or by its
// parent for `convert images|jsonl|text`) the options, subcommands and a callback that
// stores the command's exit code in *exit_code (see common.h for the codes).
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

void AddConvertImagesCommand(CLI::App* convert, int* exit_code);  // convert_images.cc
void AddConvertJsonlCommand(CLI::App* convert, int* exit_code);   // convert_jsonl.cc
void AddConvertTextCommand(CLI::App* convert, int* exit_code);    // convert_text.cc
void AddInspectCommand(CLI::App* cmd, int* exit_code);            // inspect.cc
void AddVerifyCommand(CLI::App* cmd, int* exit_code);             // verify.cc
void AddIndexCommand(CLI::App* cmd, int* exit_code);              // index.cc
void AddTableCommand(CLI::App* cmd, int* exit_code);              // table.cc
void AddStatsCommand(CLI::App* cmd, int* exit_code);              // stats.cc (distributed)
void AddDedupCommand(CLI::App* cmd, int* exit_code);              // dedup.cc (distributed)
void AddCleanCommand(CLI::App* cmd, int* exit_code);              // clean.cc
void AddCacheCommand(CLI::App* cmd, int* exit_code);              // cache.cc
void AddReshardCommand(CLI::App* cmd, int* exit_code);            // reshard.cc (distributed)

}  // namespace sluice::cli
