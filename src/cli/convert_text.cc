// `sluice convert text FILE OUT --tokenizer MODEL`: plain text, one document per line (or
// per blank-line-separated paragraph), into pre-tokenized shards or a token cache.
#include "cli/commands.h"
#include "cli/tokenized_output.h"
#include "sluice/text/plain_text.h"

namespace sluice::cli {
namespace {

struct TextOptions {
  std::string file;
  std::string out;
  bool paragraphs = false;
  TokenizeFlags tokenize;
  OutputOptions output;
};

int RunConvertText(const TextOptions& opts) {
  Stopwatch clock;
  auto in = Locate(opts.file);
  if (!in.ok()) return ReportError(in.status());
  auto out = Locate(opts.out);
  if (!out.ok()) return ReportError(out.status());
  auto data = in->fs->ReadAll(in->path);
  if (!data.ok()) return ReportError(data.status());
  auto writer = TokenizedWriter::Open(opts.tokenize, opts.file, *out, opts.output, "text");
  if (!writer.ok()) return ReportError(writer.status());

  ConvertSummary summary;
  summary.bytes_in = data->size();
  auto unit = opts.paragraphs ? text::TextUnit::kParagraph : text::TextUnit::kLine;
  for (const text::TextDocument& doc : text::SplitText(*data, unit)) {
    PendingDocument pending;
    pending.text = std::string(doc.text);
    pending.offset = doc.offset;
    pending.line = doc.line;
    Status s = (*writer)->Add(std::move(pending));
    if (!s.ok()) return ReportError(s);
  }
  Status s = (*writer)->Finish(opts.paragraphs ? "text paragraphs" : "text lines", &summary);
  if (!s.ok()) return ReportError(s);
  summary.seconds = clock.seconds();
  PrintSummary(summary);
  return kExitOk;
}

}  // namespace

void AddConvertTextCommand(CLI::App* convert, int* exit_code) {
  auto opts = std::make_shared<TextOptions>();
  CLI::App* cmd = convert->add_subcommand(
      "text", "Tokenize a plain-text file into shards or a token cache, one document a line");
  cmd->footer(
      "Each document becomes a tf.train.Example with int64 feature `tokens` (and bytes `text` "
      "with --keep-text), or one document of the token cache with --token-cache. Invalid "
      "UTF-8 stops the run naming the line (--on-error raise) or is reported and skipped.");
  cmd->add_option("FILE", opts->file, "the text file")->required();
  cmd->add_option("OUT", opts->out, "output directory")->required();
  cmd->add_flag("--paragraphs", opts->paragraphs,
                "one document per blank-line-separated paragraph instead of per line");
  AddTokenizeFlags(cmd, &opts->tokenize);
  cmd->get_option("--tokenizer")->required();
  AddOutputOptions(cmd, &opts->output);
  cmd->callback([opts, exit_code] { *exit_code = RunConvertText(*opts); });
}

}  // namespace sluice::cli
