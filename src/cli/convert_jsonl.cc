// `sluice convert jsonl FILE OUT`: one tf.train.Example per JSON line.
//
// Typing (docs/cli.md): string -> bytes, integer -> int64, float -> float, bool -> int64
// 0/1, arrays of numbers -> int64 or float lists, arrays of strings -> bytes lists. Nested
// objects, null and mixed arrays are left out with a note. A feature keeps the type of its
// first occurrence, so that every record of the dataset parses the same way: integers are
// accepted into a float feature, anything else of another type makes the line bad.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
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
  std::string file;
  std::string out;
  std::string text_field = "text";  // Default: "text"
  TokenizeFlags tokenize;           // with --tokenizer: `tokens` replaces the text field
  OutputOptions output;
};

// One JSON value as feature values, before the type check against earlier lines.
struct FieldValues {
  FeatureType type = FeatureType::kNone;  // kNone: an empty array (no values, no type)
  std::vector<std::string> bytes;
  std::vector<int64_t> int64s;
  std::vector<double> numbers;  // kFloat, and int64s again as doubles for widening
};

// A field left out of some records, for the summary.
struct LeftOut {
  std::string kind;  // "object", "null", "mixed array"
  uint64_t lines = 0;
  uint64_t first_line = 0;
};

// Converts a scalar; nullopt when the JSON kind has no feature form.
std::optional<FieldValues> Scalar(const Json& v) {
  FieldValues f;
  if (v.is_string()) {
    f.type = FeatureType::kBytes;
    f.bytes.push_back(v.get<std::string>());
  } else if (v.is_boolean() || v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) return std::nullopt;
    f.type = FeatureType::kInt64;
    f.int64s.push_back(v.is_boolean() ? (v.get<bool>() ? 1 : 0) : v.get<int64_t>());
    f.numbers.push_back(static_cast<double>(f.int64s.back()));
  } else if (v.is_number_float()) {
    f.type = FeatureType::kFloat;
    f.numbers.push_back(v.get<double>());
  } else {
    return std::nullopt;
  }
  return f;
}

// Arrays of one scalar family; numbers widen to float when any element is a float.
std::optional<FieldValues> Values(const Json& v) {
  if (!v.is_array()) return Scalar(v);
  FieldValues all;
  for (const Json& element : v) {
    auto one = Scalar(element);
    if (!one) return std::nullopt;
    bool same_family = all.type == FeatureType::kNone ||
                       (all.type == FeatureType::kBytes) == (one->type == FeatureType::kBytes);
    if (!same_family) return std::nullopt;
    if (all.type != FeatureType::kFloat) all.type = one->type;
    for (auto& b : one->bytes) all.bytes.push_back(std::move(b));
    all.int64s.insert(all.int64s.end(), one->int64s.begin(), one->int64s.end());
    all.numbers.insert(all.numbers.end(), one->numbers.begin(), one->numbers.end());
  }
  return all;
}

std::string KindOf(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_object()) return "object";
  if (v.is_number_unsigned()) return "integer beyond int64";
  return "array of mixed or nested values";
}

class JsonlConverter {
 public:
  // `omit_text`: the text field is not added to the Example (it is tokenized instead).
  JsonlConverter(std::string text_field, bool omit_text)
      : text_field_(std::move(text_field)), omit_text_(omit_text) {}

  // Builds the Example of one line and returns its text field. An error is why the line is
  // skipped; the feature types learned from a skipped line are forgotten.
  Status Convert(std::string_view line, uint64_t line_number, format::ExampleBuilder* example,
                 std::string* text);
  std::vector<std::string> Notes() const;

 private:
  Status CheckType(const std::string& name, const FieldValues& f) const;
  void Add(const std::string& name, const FieldValues& f, format::ExampleBuilder* example) const;

  const std::string text_field_;
  const bool omit_text_;
  std::map<std::string, FeatureType> types_;  // fixed by each feature's first occurrence
  std::map<std::string, LeftOut> left_out_;
};

Status JsonlConverter::Convert(std::string_view line, uint64_t line_number,
                               format::ExampleBuilder* example, std::string* text_out) {
  Json object;
  try {
    object = Json::parse(line);
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("invalid JSON: ") + e.what());
  }
  if (!object.is_object()) return InvalidArgument("not a JSON object");
  auto text = object.find(text_field_);
  if (text == object.end()) return InvalidArgument("no \"" + text_field_ + "\" field");
  if (!text->is_string()) return InvalidArgument("\"" + text_field_ + "\" is not a string");

  std::map<std::string, FieldValues> fields;
  std::vector<std::pair<std::string, std::string>> skipped;  // (field, kind)
  *text_out = text->get<std::string>();
  for (const auto& [name, value] : object.items()) {
    if (omit_text_ && name == text_field_) continue;
    auto f = Values(value);
    if (!f) {
      skipped.emplace_back(name, KindOf(value));
      continue;
    }
    if (f->type == FeatureType::kNone) continue;  // []: no values; absent reads the same
    SLUICE_RETURN_IF_ERROR(CheckType(name, *f));
    fields.emplace(name, std::move(*f));
  }
  example->Clear();
  for (const auto& [name, f] : fields) {
    types_.emplace(name, f.type);  // keeps an existing (possibly wider) type
    Add(name, f, example);
  }
  for (const auto& [name, kind] : skipped) {
    LeftOut& l = left_out_[name];
    if (l.lines++ == 0) {
      l.first_line = line_number;
      l.kind = kind;
    }
  }
  return Status::OK();
}

Status JsonlConverter::CheckType(const std::string& name, const FieldValues& f) const {
  auto known = types_.find(name);
  if (known == types_.end() || known->second == f.type) return Status::OK();
  if (known->second == FeatureType::kFloat && f.type == FeatureType::kInt64) return Status::OK();
  return InvalidArgument("field \"" + name + "\" is " + std::string(FeatureTypeName(f.type)) +
                         " here but " + std::string(FeatureTypeName(known->second)) +
                         " in earlier lines (write 1.0, not 1, for a float field)");
}

void JsonlConverter::Add(const std::string& name, const FieldValues& f,
                         format::ExampleBuilder* example) const {
  switch (types_.at(name)) {
    case FeatureType::kBytes:
      example->AddBytes(name, f.bytes);
      break;
    case FeatureType::kInt64:
      example->AddInt64s(name, f.int64s);
      break;
    case FeatureType::kFloat:
      example->AddFloats(name, std::vector<float>(f.numbers.begin(), f.numbers.end()));
      break;
    case FeatureType::kNone:
      break;
  }
}

std::vector<std::string> JsonlConverter::Notes() const {
  std::vector<std::string> notes;
  for (const auto& [name, l] : left_out_) {
    notes.push_back("field \"" + name + "\" (" + l.kind + ") not converted in " +
                    std::to_string(l.lines) + " line(s), first on line " +
                    std::to_string(l.first_line));
  }
  return notes;
}

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
Status CheckUtf8(const JsonlOptions& opts, std::string_view line, uint64_t offset,
                 uint64_t line_number, bool* skip) {
  *skip = false;
  std::optional<size_t> bad = text::FindInvalidUtf8(line);
  if (!bad) return Status::OK();
  Status error = text::InvalidUtf8Error(opts.file, offset, line_number, line, *bad);
  if (opts.tokenize.on_error != "skip") return error;
  std::fprintf(stderr, "sluice: skipped %s:%llu: invalid UTF-8\n", opts.file.c_str(),
               static_cast<unsigned long long>(line_number));
  *skip = true;
  return Status::OK();
}

Status ConvertLines(const JsonlOptions& opts, io::LineReader* lines, LineSink* sink,
                    ConvertSummary* summary) {
  const bool tokenize = !opts.tokenize.tokenizer.empty();
  JsonlConverter converter(opts.text_field, tokenize && !opts.tokenize.keep_text);
  format::ExampleBuilder example;
  std::string text;
  ProgressBar progress("converting jsonl", lines->file_size(), ProgressBar::Unit::kBytes);
  std::string_view line;
  while (true) {
    uint64_t offset = lines->bytes_consumed();
    SLUICE_ASSIGN_OR_RETURN(bool more, lines->Next(&line));
    if (!more) break;
    progress.Update(lines->bytes_consumed(), lines->bytes_consumed());
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank line
    if (tokenize) {
      bool skip = false;
      SLUICE_RETURN_IF_ERROR(CheckUtf8(opts, line, offset, lines->line_number(), &skip));
      if (skip) {
        ++summary->skipped;
        continue;
      }
    }
    Status s = converter.Convert(line, lines->line_number(), &example, &text);
    if (!s.ok()) {
      progress.Clear();
      std::fprintf(stderr, "sluice: skipped %s:%llu: %s\n", opts.file.c_str(),
                   static_cast<unsigned long long>(lines->line_number()), s.message().c_str());
      ++summary->skipped;
      continue;
    }
    SLUICE_RETURN_IF_ERROR(sink->Add(example, std::move(text), lines->line_number(), offset));
    ++summary->records;
  }
  summary->bytes_in = lines->bytes_consumed();
  summary->notes = converter.Notes();
  return Status::OK();
}

Status ConvertTokenized(const JsonlOptions& opts, const Location& out, io::LineReader* lines,
                        ConvertSummary* summary) {
  SLUICE_ASSIGN_OR_RETURN(auto writer, TokenizedWriter::Open(opts.tokenize, opts.file, out,
                                                             opts.output, opts.text_field));
  TokenizedSink sink(writer.get());
  SLUICE_RETURN_IF_ERROR(ConvertLines(opts, lines, &sink, summary));
  summary->records = 0;  // the writer counts what it wrote (skips and splits included)
  return writer->Finish("jsonl", summary);
}

Status ConvertPlain(const JsonlOptions& opts, const Location& out, io::LineReader* lines,
                    ConvertSummary* summary) {
  SLUICE_ASSIGN_OR_RETURN(auto writer, OpenShardWriter(out, opts.output, "sluice convert jsonl"));
  ShardSink sink(writer.get());
  SLUICE_RETURN_IF_ERROR(ConvertLines(opts, lines, &sink, summary));
  if (summary->records == 0) return DataLoss(opts.file + ": no line could be converted");
  writer->SetFeatures(sink.schema());
  writer->SetMetadata("source", "jsonl");
  writer->SetMetadata("text_field", opts.text_field);
  SLUICE_RETURN_IF_ERROR(writer->Close());
  summary->shards = writer->manifest().shards.size();
  for (const auto& shard : writer->manifest().shards) summary->bytes_out += shard.file_bytes;
  return Status::OK();
}

int RunConvertJsonl(const JsonlOptions& opts) {
  Stopwatch clock;
  auto in = Locate(opts.file);
  if (!in.ok()) return ReportError(in.status());
  auto out = Locate(opts.out);
  if (!out.ok()) return ReportError(out.status());
  auto lines = io::LineReader::Open(in->fs, in->path);
  if (!lines.ok()) return ReportError(lines.status());
  ConvertSummary summary;
  Status s = opts.tokenize.tokenizer.empty() ? ConvertPlain(opts, *out, lines->get(), &summary)
                                             : ConvertTokenized(opts, *out, lines->get(), &summary);
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
      "the exit code is then still 0, with a warning line.");
  cmd->add_option("FILE", opts->file, "the .jsonl file")->required();
  cmd->add_option("OUT", opts->out, "output directory for shards and dataset.json")->required();
  cmd->add_option("--text-field", opts->text_field, "field holding each record's text")
      ->capture_default_str();
  AddTokenizeFlags(cmd, &opts->tokenize);
  AddOutputOptions(cmd, &opts->output);
  cmd->callback([opts, exit_code] { *exit_code = RunConvertJsonl(*opts); });
}

}  // namespace sluice::cli
