// `sluice convert text FILE... OUT --tokenizer MODEL`: plain text, one document per line (or
// per blank-line-separated paragraph), into pre-tokenized shards or a token cache. Several
// files (or quoted globs) are read in order; under mpirun/srun they are a job's tasks.
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/convert_job.h"
#include "cli/tokenized_output.h"
#include "sluice/text/plain_text.h"

namespace sluice::cli {
namespace {

struct TextOptions {
  std::vector<std::string> files;
  std::string out;
  bool paragraphs = false;
  TokenizeFlags tokenize;
  OutputOptions output;
  ConvertJobFlags job;  // under mpirun/srun
  bool strict = false;  // --strict: the same as --on-error raise (UTF-8 is the only skip)

  text::TextUnit unit() const {
    return paragraphs ? text::TextUnit::kParagraph : text::TextUnit::kLine;
  }
  std::string source() const { return paragraphs ? "text paragraphs" : "text lines"; }
};

// Queues the documents of one file's text (`data`, at offset `begin` of the file).
Status AddDocuments(const TextOptions& opts, std::string_view data, uint64_t begin,
                    TokenizedWriter* writer) {
  for (const text::TextDocument& doc : text::SplitText(data, opts.unit())) {
    PendingDocument pending;
    pending.text = std::string(doc.text);
    pending.offset = begin + doc.offset;
    pending.line = doc.line;
    SLUICE_RETURN_IF_ERROR(writer->Add(std::move(pending)));
  }
  return Status::OK();
}

// Under mpirun/srun: each task is a file or, one document a line, a range of a large file's
// lines (line numbers in messages then count from the range's first line).
class TextJob final : public dist::TaskConverter {
 public:
  explicit TextJob(const TextOptions& opts) : opts_(opts) {}

  Status Start() override {  // the model, once per rank
    SLUICE_ASSIGN_OR_RETURN(tokenizer_, TokenizedWriter::LoadTokenizer(opts_.tokenize));
    return Status::OK();
  }

  Result<std::string> Convert(const dist::TaskSpec& task, const std::string&,
                              format::ShardWriter* out, const io::CancelToken&) override {
    SLUICE_ASSIGN_OR_RETURN(dist::FileRange range, dist::FileRange::Decode(task.input));
    uint64_t begin = 0;
    SLUICE_ASSIGN_OR_RETURN(std::string data, ReadTaskInput(range, &begin));
    SLUICE_ASSIGN_OR_RETURN(
        auto writer, TokenizedWriter::Into(opts_.tokenize, range.path, out, "text", tokenizer_));
    SLUICE_RETURN_IF_ERROR(AddDocuments(opts_, data, begin, writer.get()));
    ConvertSummary c;
    SLUICE_RETURN_IF_ERROR(writer->Finish(opts_.source(), &c));
    nlohmann::json result = {{"records", c.records},
                             {"skipped", c.skipped},
                             {"bytes_in", data.size()},
                             {"schema", SchemaToJson(writer->schema())}};
    return result.dump();
  }

  Status Finish(const std::vector<std::string>& results, dist::JobOutput*,
                format::Manifest* manifest) override {
    SLUICE_ASSIGN_OR_RETURN(manifest->features, SchemaOfResults(results));
    if (manifest->features.empty()) return DataLoss("no document could be converted");
    manifest->metadata = {{"source", opts_.source()}, {"tokenizer", opts_.tokenize.tokenizer}};
    return Status::OK();
  }

 private:
  const TextOptions& opts_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
};

int RunTextJob(const TextOptions& opts, const std::vector<dist::InputFile>& files) {
  TextJob job(opts);
  std::string options =
      (opts.paragraphs ? "paragraphs " : "lines ") + TokenizeIdentity(opts.tokenize);
  ConvertJobSpec spec{"sluice convert text", opts.out, opts.output, opts.job, options};
  return RunConvertCommand(spec, files, FileTaskPlan(opts.job, files, !opts.paragraphs), &job);
}

int RunConvertText(const TextOptions& opts) {
  Stopwatch clock;
  auto files = ExpandInputs(opts.files);
  if (!files.ok()) return ReportError(files.status());
  if (UnderJobLauncher() || opts.job.output.table) return RunTextJob(opts, *files);
  auto out = Locate(opts.out);
  if (!out.ok()) return ReportError(out.status());
  auto writer =
      TokenizedWriter::Open(opts.tokenize, files->front().path, *out, opts.output, "text");
  if (!writer.ok()) return ReportError(writer.status());

  ConvertSummary summary;
  for (const dist::InputFile& file : *files) {
    auto in = Locate(file.path);
    if (!in.ok()) return ReportError(in.status());
    auto data = in->fs->ReadAll(in->path);
    if (!data.ok()) return ReportError(data.status());
    summary.bytes_in += data->size();
    Status s = (*writer)->StartFile(file.path);
    if (s.ok()) s = AddDocuments(opts, *data, 0, writer->get());
    if (!s.ok()) return ReportError(s);
  }
  Status s = (*writer)->Finish(opts.source(), &summary);
  if (!s.ok()) return ReportError(s);
  summary.seconds = clock.seconds();
  PrintSummary(summary);
  return kExitOk;
}

}  // namespace

void AddConvertTextCommand(CLI::App* convert, int* exit_code) {
  auto opts = std::make_shared<TextOptions>();
  CLI::App* cmd = convert->add_subcommand(
      "text", "Tokenize plain-text files into shards or a token cache, one document a line");
  cmd->footer(
      "Each document becomes a tf.train.Example with int64 feature `tokens` (and bytes `text` "
      "with --keep-text), or one document of the token cache with --token-cache. Invalid "
      "UTF-8 stops the run naming the line (--on-error raise, or --strict) or is reported and "
      "skipped. "
      "Several FILEs or quoted globs are read in order; under mpirun/srun the files (and line "
      "ranges of large ones) are the tasks of one job (docs/dist.md).");
  AddInputsAndOut(cmd, &opts->files, &opts->out, "text files");
  cmd->add_flag("--paragraphs", opts->paragraphs,
                "one document per blank-line-separated paragraph instead of per line");
  AddTokenizeFlags(cmd, &opts->tokenize);
  cmd->get_option("--tokenizer")->required();
  AddOutputOptions(cmd, &opts->output);
  AddConvertJobFlags(cmd, &opts->job);
  AddStrictFlag(cmd, &opts->strict);
  cmd->callback([opts, exit_code] {
    if (opts->strict) opts->tokenize.on_error = "raise";  // invalid UTF-8 is the only skip
    *exit_code = RunConvertText(*opts);
  });
}

}  // namespace sluice::cli
