// `sluice convert jsonl FILE OUT`: one tf.train.Example per JSON line (JsonlConverter,
// jsonl_converter.h, says how fields are typed), written as shards or tokenized, alone or as
// a distributed job.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/convert_job.h"
#include "cli/jsonl_converter.h"
#include "cli/progress.h"
#include "cli/tokenized_output.h"
#include "sluice/format/example.h"
#include "sluice/format/example_json.h"
#include "sluice/io/line_reader.h"
#include "sluice/text/utf8.h"

namespace sluice::cli {
namespace {

using Json = nlohmann::json;
using format::FeatureType;

struct JsonlOptions {
  std::vector<std::string> files;
  std::string out;
  std::string text_field = "text";  // Default: "text"
  TokenizeFlags tokenize;           // with --tokenizer: `tokens` replaces the text field
  OutputOptions output;
  ConvertJobFlags job;  // under mpirun/srun
  bool strict = false;  // --strict: a line that would be skipped fails the run
  std::string schema;   // --schema FIELD=TYPE,...: types that are not inferred
  std::map<std::string, FeatureType> declared;  // the --schema types
};

// Where the Examples of converted lines go: shards as they are, or a TokenizedWriter.
class LineSink {
 public:
  virtual ~LineSink() = default;
  virtual Status Add(format::ExampleBuilder& example, std::string text, uint64_t line,
                     uint64_t offset) = 0;
};

class ShardSink final : public LineSink {
 public:
  explicit ShardSink(format::ShardWriter* writer) : writer_(writer) {}
  Status Add(format::ExampleBuilder& example, std::string, uint64_t, uint64_t) override {
    record_.clear();
    example.SerializeTo(&record_);
    SLUICE_RETURN_IF_ERROR(view_.Parse(record_));
    SLUICE_RETURN_IF_ERROR(schema_.Add(view_));
    return writer_->Write(record_);
  }
  std::map<std::string, format::FeatureSchema> schema() const { return schema_.schema(); }

 private:
  format::ShardWriter* writer_;
  format::SchemaInference schema_;
  format::ExampleView view_;
  std::string record_;
};

class TokenizedSink final : public LineSink {
 public:
  explicit TokenizedSink(TokenizedWriter* writer) : writer_(writer) {}
  Status Add(format::ExampleBuilder& example, std::string text, uint64_t line,
             uint64_t offset) override {
    PendingDocument doc;
    doc.text = std::move(text);
    doc.line = line;
    doc.offset = offset;
    doc.features = std::move(example);
    example.Clear();
    return writer_->Add(std::move(doc));
  }

 private:
  TokenizedWriter* writer_;
};

// With --tokenizer, invalid UTF-8 is the --on-error policy's (checked before JSON parsing,
// which would reject the line as bad JSON). OK: the line is fine or was reported for skip.
Status CheckUtf8(const JsonlOptions& opts, const std::string& file, std::string_view line,
                 uint64_t offset, uint64_t line_number, bool* skip) {
  *skip = false;
  std::optional<size_t> bad = text::FindInvalidUtf8(line);
  if (!bad) return Status::OK();
  Status error = text::InvalidUtf8Error(file, offset, line_number, line, *bad);
  if (opts.tokenize.on_error != "skip" || opts.strict) return error;  // --strict: raise
  std::fprintf(stderr, "sluice: skipped %s:%llu: invalid UTF-8\n", file.c_str(),
               static_cast<unsigned long long>(line_number));
  *skip = true;
  return Status::OK();
}

bool OmitsText(const JsonlOptions& opts) {
  return !opts.tokenize.tokenizer.empty() && !opts.tokenize.keep_text;
}

// The lines of `file` (read by `lines`) through `converter` into `sink`.
Status ConvertLines(const JsonlOptions& opts, const std::string& file, JsonlConverter* converter,
                    io::LineReader* lines, LineSink* sink, ConvertSummary* summary) {
  const bool tokenize = !opts.tokenize.tokenizer.empty();
  converter->set_source(file);
  format::ExampleBuilder example;
  std::string text;
  ProgressBar progress("converting jsonl", lines->file_size(), ProgressBar::Unit::kBytes);
  std::string_view line;
  while (true) {
    uint64_t offset = lines->next_offset();
    SLUICE_ASSIGN_OR_RETURN(bool more, lines->Next(&line));
    if (!more) break;
    progress.Update(lines->bytes_consumed(), lines->bytes_consumed());
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank line
    if (tokenize) {
      bool skip = false;
      SLUICE_RETURN_IF_ERROR(CheckUtf8(opts, file, line, offset, lines->line_number(), &skip));
      if (skip) {
        ++summary->skipped;
        continue;
      }
    }
    Status s = converter->Convert(line, lines->line_number(), &example, &text);
    if (!s.ok() && opts.strict) {
      return StrictFailure(file + ":" + std::to_string(lines->line_number()), s.message());
    }
    if (!s.ok()) {
      progress.Clear();
      std::fprintf(stderr, "sluice: skipped %s:%llu: %s\n", file.c_str(),
                   static_cast<unsigned long long>(lines->line_number()), s.message().c_str());
      ++summary->skipped;
      continue;
    }
    SLUICE_RETURN_IF_ERROR(sink->Add(example, std::move(text), lines->line_number(), offset));
    ++summary->records;
  }
  summary->bytes_in += lines->bytes_consumed();
  return Status::OK();
}

std::string NoLineConverted(const std::vector<dist::InputFile>& files) {
  return (files.size() == 1 ? files[0].path : std::to_string(files.size()) + " files") +
         ": no line could be converted";
}

// The feature types of the whole input (jsonl_typing.h), from a first pass over every line,
// or why no type holds some field's values.
Result<std::map<std::string, FeatureType>> TypeFields(const JsonlOptions& opts,
                                                      const std::vector<dist::InputFile>& files) {
  JsonlConverter survey(opts.text_field, OmitsText(opts));
  for (const dist::InputFile& file : files) {
    SLUICE_ASSIGN_OR_RETURN(Location in, Locate(file.path));
    SLUICE_ASSIGN_OR_RETURN(auto lines, io::LineReader::Open(in.fs, in.path));
    survey.set_source(file.path);
    ProgressBar progress("typing jsonl fields", lines->file_size(), ProgressBar::Unit::kBytes);
    std::string_view line;
    while (true) {
      SLUICE_ASSIGN_OR_RETURN(bool more, lines->Next(&line));
      if (!more) break;
      progress.Update(lines->bytes_consumed(), lines->bytes_consumed());
      survey.Survey(line, lines->line_number());
    }
  }
  return survey.uses().Decide(opts.declared);
}

// Every input file in order through one converter, seeded with `types`, into `sink`.
Status ConvertFiles(const JsonlOptions& opts, const std::vector<dist::InputFile>& files,
                    std::map<std::string, FeatureType> types, LineSink* sink,
                    TokenizedWriter* tokenized, ConvertSummary* summary) {
  JsonlConverter converter(opts.text_field, OmitsText(opts), opts.declared);
  converter.Seed(std::move(types));
  for (const dist::InputFile& file : files) {
    SLUICE_ASSIGN_OR_RETURN(Location in, Locate(file.path));
    SLUICE_ASSIGN_OR_RETURN(auto lines, io::LineReader::Open(in.fs, in.path));
    if (tokenized != nullptr) SLUICE_RETURN_IF_ERROR(tokenized->StartFile(file.path));
    SLUICE_RETURN_IF_ERROR(ConvertLines(opts, file.path, &converter, lines.get(), sink, summary));
  }
  summary->notes = converter.Notes();
  return Status::OK();
}

Status ConvertTokenized(const JsonlOptions& opts, const Location& out,
                        const std::vector<dist::InputFile>& files, ConvertSummary* summary) {
  SLUICE_ASSIGN_OR_RETURN(auto types, TypeFields(opts, files));  // before anything is written
  SLUICE_ASSIGN_OR_RETURN(auto writer, TokenizedWriter::Open(opts.tokenize, files.front().path, out,
                                                             opts.output, opts.text_field));
  TokenizedSink sink(writer.get());
  SLUICE_RETURN_IF_ERROR(ConvertFiles(opts, files, std::move(types), &sink, writer.get(), summary));
  summary->records = 0;  // the writer counts what it wrote (skips and splits included)
  return writer->Finish("jsonl", summary);
}

Status ConvertPlain(const JsonlOptions& opts, const Location& out,
                    const std::vector<dist::InputFile>& files, ConvertSummary* summary) {
  SLUICE_ASSIGN_OR_RETURN(auto types, TypeFields(opts, files));  // before anything is written
  SLUICE_ASSIGN_OR_RETURN(auto writer, OpenShardWriter(out, opts.output, "sluice convert jsonl"));
  ShardSink sink(writer.get());
  SLUICE_RETURN_IF_ERROR(ConvertFiles(opts, files, std::move(types), &sink, nullptr, summary));
  if (summary->records == 0) return DataLoss(NoLineConverted(files));
  writer->SetFeatures(sink.schema());
  writer->SetMetadata("source", "jsonl");
  writer->SetMetadata("text_field", opts.text_field);
  SLUICE_RETURN_IF_ERROR(writer->Close());
  summary->shards = writer->manifest().shards.size();
  for (const auto& shard : writer->manifest().shards) summary->bytes_out += shard.file_bytes;
  return Status::OK();
}

// Feature types as JSON ({"name": type}), a task's hint.
std::string TypesToJson(const std::map<std::string, FeatureType>& types) {
  Json j = Json::object();
  for (const auto& [name, type] : types) j[name] = static_cast<int>(type);
  return j.dump();
}

std::map<std::string, FeatureType> TypesFromJson(const Json& j) {
  std::map<std::string, FeatureType> types;
  if (!j.is_object()) return types;
  for (const auto& [name, type] : j.items()) {
    if (type.is_number_integer()) types[name] = static_cast<FeatureType>(type.get<int>());
  }
  return types;
}

// Under mpirun/srun: each task is a file or a range of a large file's lines. A task types
// the fields it meets first by itself and reports every field's uses; Revise then decides the
// types from the uses of all tasks (the whole input, jsonl_typing.h) and converts again,
// seeded with them, every task that typed a field otherwise (or was seeded otherwise), so
// that the dataset is typed as one process typing the whole input types it.
class JsonlJob final : public dist::TaskConverter {
 public:
  explicit JsonlJob(const JsonlOptions& opts) : opts_(opts) {}

  Status Start() override {  // the model, once per rank
    if (opts_.tokenize.tokenizer.empty()) return Status::OK();
    SLUICE_ASSIGN_OR_RETURN(tokenizer_, TokenizedWriter::LoadTokenizer(opts_.tokenize));
    return Status::OK();
  }

  Result<std::string> Convert(const dist::TaskSpec& task, const std::string& hint,
                              format::ShardWriter* out, const io::CancelToken&) override {
    SLUICE_ASSIGN_OR_RETURN(dist::FileRange range, dist::FileRange::Decode(task.input));
    SLUICE_ASSIGN_OR_RETURN(Location in, Locate(range.path));
    dist::FileRange located = range;
    located.path = in.path;
    SLUICE_ASSIGN_OR_RETURN(auto bytes, TaskInputRange(in.fs, located));
    SLUICE_ASSIGN_OR_RETURN(auto lines,
                            io::LineReader::Open(in.fs, in.path, bytes.first, bytes.second));
    JsonlConverter converter(opts_.text_field, OmitsText(opts_), opts_.declared);
    if (!hint.empty()) converter.Seed(TypesFromJson(Json::parse(hint, nullptr, false)));
    ConvertSummary c;
    std::map<std::string, format::FeatureSchema> schema;
    if (opts_.tokenize.tokenizer.empty()) {
      ShardSink sink(out);
      SLUICE_RETURN_IF_ERROR(ConvertLines(opts_, range.path, &converter, lines.get(), &sink, &c));
      schema = sink.schema();
    } else {
      SLUICE_ASSIGN_OR_RETURN(auto writer, TokenizedWriter::Into(opts_.tokenize, range.path, out,
                                                                 opts_.text_field, tokenizer_));
      TokenizedSink sink(writer.get());
      SLUICE_RETURN_IF_ERROR(ConvertLines(opts_, range.path, &converter, lines.get(), &sink, &c));
      c.records = 0;  // the writer counts what it wrote (skips and splits included)
      SLUICE_RETURN_IF_ERROR(writer->Finish("jsonl", &c));
      schema = writer->schema();
    }
    Json result = {{"records", c.records},
                   {"skipped", c.skipped},
                   {"bytes_in", c.bytes_in},
                   {"schema", SchemaToJson(schema)},
                   {"types", Json::parse(TypesToJson(converter.types()))},
                   {"uses", converter.uses().ToJson()},
                   {"hint", hint.empty() ? Json() : Json(hint)},
                   {"notes", converter.Notes()}};
    return result.dump();
  }

  Result<std::map<dist::TaskId, std::string>> Revise(
      const std::vector<std::string>& results) override {
    std::vector<Json> parsed;
    FieldUses uses;  // of the whole input, in task order
    for (dist::TaskId t = 0; t < results.size(); ++t) {
      Json& r = parsed.emplace_back(Json::parse(results[t], nullptr, false));
      if (!r.is_object()) return DataLoss("malformed result of task " + std::to_string(t));
      uses.Merge(FieldUses::FromJson(r["uses"]));
    }
    SLUICE_ASSIGN_OR_RETURN(auto decided, uses.Decide(opts_.declared));
    const std::string expected = TypesToJson(decided);
    std::map<dist::TaskId, std::string> redo;
    for (dist::TaskId t = 0; t < parsed.size(); ++t) {
      const Json& r = parsed[t];
      bool agrees = true;
      if (r["hint"].is_string()) {
        agrees = r["hint"].get<std::string>() == expected;
      } else {
        for (const auto& [name, type] : TypesFromJson(r["types"])) {
          auto it = decided.find(name);
          if (it != decided.end() && it->second != type) agrees = false;
        }
      }
      if (!agrees) redo[t] = expected;
    }
    return redo;
  }

  Status Finish(const std::vector<std::string>& results, dist::JobOutput*,
                format::Manifest* manifest) override {
    SLUICE_ASSIGN_OR_RETURN(manifest->features, SchemaOfResults(results));
    uint64_t records = 0;
    for (const std::string& result : results) {
      records += TaskCounts::Of(result).records;
      Json r = Json::parse(result, nullptr, false);
      if (r.is_object() && r["notes"].is_array()) {
        for (const Json& note : r["notes"]) notes.push_back(note.get<std::string>());
      }
    }
    if (records == 0) return DataLoss("no line could be converted");
    manifest->metadata = {{"source", "jsonl"}};
    if (opts_.tokenize.tokenizer.empty()) {
      manifest->metadata["text_field"] = opts_.text_field;
    } else {
      manifest->metadata["tokenizer"] = opts_.tokenize.tokenizer;
    }
    return Status::OK();
  }

  std::vector<std::string> notes;  // of the tasks, in order (line numbers within a task)

 private:
  const JsonlOptions& opts_;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
};

int RunJsonlJob(const JsonlOptions& opts, const std::vector<dist::InputFile>& files) {
  JsonlJob job(opts);
  std::string options = opts.text_field + " " + TokenizeIdentity(opts.tokenize);
  ConvertJobSpec spec{"sluice convert jsonl", opts.out, opts.output, opts.job, options};
  return RunConvertCommand(spec, files, FileTaskPlan(opts.job, files, /*splittable=*/true), &job,
                           &job.notes);
}

int RunConvertJsonl(const JsonlOptions& opts) {
  Stopwatch clock;
  auto files = ExpandInputs(opts.files);
  if (!files.ok()) return ReportError(files.status());
  if (UnderJobLauncher() || opts.job.output.table) return RunJsonlJob(opts, *files);
  auto out = Locate(opts.out);
  if (!out.ok()) return ReportError(out.status());
  ConvertSummary summary;
  Status s = opts.tokenize.tokenizer.empty() ? ConvertPlain(opts, *out, *files, &summary)
                                             : ConvertTokenized(opts, *out, *files, &summary);
  if (!s.ok()) return ReportError(s);
  summary.seconds = clock.seconds();
  PrintSummary(summary);
  return kExitOk;
}

}  // namespace

void AddConvertJsonlCommand(CLI::App* convert, int* exit_code) {
  auto opts = std::make_shared<JsonlOptions>();
  CLI::App* cmd =
      convert->add_subcommand("jsonl", "Convert a JSON-lines file into shards, one record a line");
  cmd->footer(
      "Each line becomes a tf.train.Example: the text field as bytes; other fields as string "
      "-> bytes, integer/bool -> int64, float -> float, arrays -> lists. Objects and null are "
      "left out (noted in the summary). A bad line is reported with its number and skipped; "
      "the exit code is then still 0, with a warning line (--strict: exit 1 instead, nothing "
      "published).");
  AddInputsAndOut(cmd, &opts->files, &opts->out, ".jsonl files");
  cmd->add_option("--text-field", opts->text_field, "field holding each record's text")
      ->capture_default_str();
  AddTokenizeFlags(cmd, &opts->tokenize);
  AddOutputOptions(cmd, &opts->output);
  AddConvertJobFlags(cmd, &opts->job);
  AddStrictFlag(cmd, &opts->strict);
  cmd->add_option("--schema", opts->schema,
                  "FIELD=TYPE[,FIELD=TYPE...] (TYPE int64, float or bytes): types not inferred "
                  "from the input (a float rounds integers to float32)");
  cmd->callback([opts, exit_code] {
    auto declared = ParseSchemaFlag(opts->schema);
    if (!declared.ok()) {
      *exit_code = ReportError(declared.status());
      return;
    }
    opts->declared = std::move(*declared);
    *exit_code = RunConvertJsonl(*opts);
  });
}

}  // namespace sluice::cli
