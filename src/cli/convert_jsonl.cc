// `sluice convert jsonl FILE OUT`: one tf.train.Example per JSON line.
//
// Typing (docs/cli.md): string -> bytes, integer -> int64, float -> float, bool -> int64
// 0/1, arrays of numbers -> int64 or float lists, arrays of strings -> bytes lists. Nested
// objects, null and mixed arrays are left out with a note. A feature keeps the type of its
// first occurrence, so that every record of the dataset parses the same way: integers are
// accepted into a float feature when float32 holds them exactly, anything else of another
// type, and any value the feature's type cannot store faithfully (an integer beyond int64,
// an integer float32 would round, a float beyond float32's range), makes the line bad.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/convert_job.h"
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
};

// One JSON number: integers keep their exact value (a double would round those past 2^53).
struct Number {
  bool integer = false;
  int64_t exact = 0;  // when integer
  double value = 0;   // when not
};

// One JSON value as feature values, before the type check against earlier lines.
struct FieldValues {
  FeatureType type = FeatureType::kNone;  // kNone: an empty array (no values, no type)
  std::vector<std::string> bytes;
  std::vector<Number> numbers;  // kInt64 and kFloat
};

// A field left out of some records, for the summary.
struct LeftOut {
  std::string kind;  // "object", "null", "mixed array"
  uint64_t lines = 0;
  uint64_t first_line = 0;
};

// Json::parse, except that it also notes the first integer literal of a top-level field
// that int64 cannot hold: nlohmann-json keeps such a literal as a uint64 (above 2^63 - 1) or,
// beyond 2^64, as a double, so its exact value (or sign) would be lost without a word.
class LineParser : public nlohmann::detail::json_sax_dom_parser<Json> {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;
  explicit LineParser(Json* root) : Base(*root, /*allow_exceptions=*/true) {}

  bool start_object(std::size_t n) {
    ++depth_;
    return Base::start_object(n);
  }
  bool end_object() {
    --depth_;
    return Base::end_object();
  }
  bool key(std::string& k) {
    if (depth_ == 1) field_ = k;
    return Base::key(k);
  }
  bool number_unsigned(uint64_t v) {
    if (v > uint64_t{INT64_MAX}) Note(std::to_string(v));
    return Base::number_unsigned(v);
  }
  bool number_float(double v, const std::string& text) {
    if (text.find_first_of(".eE") == std::string::npos) Note(text);  // an integer literal
    return Base::number_float(v, text);
  }

  // InvalidArgument naming the field and the literal, if there was one.
  Status TooLarge() const {
    if (literal_.empty()) return Status::OK();
    return InvalidArgument("field \"" + too_large_field_ + "\": integer " + literal_ +
                           " is beyond the int64 range (-2^63 .. 2^63-1) and no feature type "
                           "holds it exactly; write it as a string to keep it");
  }

 private:
  void Note(const std::string& literal) {
    if (depth_ == 1 && literal_.empty()) {
      literal_ = literal;
      too_large_field_ = field_;
    }
  }

  int depth_ = 0;  // of objects; 1 inside the line's object
  std::string field_;
  std::string literal_;
  std::string too_large_field_;
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
    f.numbers.push_back({true, v.is_boolean() ? (v.get<bool>() ? 1 : 0) : v.get<int64_t>(), 0});
  } else if (v.is_number_float()) {
    f.type = FeatureType::kFloat;
    f.numbers.push_back({false, 0, v.get<double>()});
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
    all.numbers.insert(all.numbers.end(), one->numbers.begin(), one->numbers.end());
  }
  return all;
}

// The values as float32, or why one cannot be stored faithfully (format::IntegerToFloat32).
Result<std::vector<float>> Floats(const std::vector<Number>& numbers) {
  std::vector<float> out;
  out.reserve(numbers.size());
  for (const Number& n : numbers) {
    SLUICE_ASSIGN_OR_RETURN(
        float f, n.integer ? format::IntegerToFloat32(n.exact) : format::NumberToFloat32(n.value));
    out.push_back(f);
  }
  return out;
}

std::vector<int64_t> Int64s(const std::vector<Number>& numbers) {
  std::vector<int64_t> out;
  out.reserve(numbers.size());
  for (const Number& n : numbers) out.push_back(n.exact);
  return out;
}

std::string KindOf(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_object()) return "object";
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

  // The feature types fixed so far; seeding them makes this converter go on where one that
  // read the earlier lines left off (a distributed job's task: docs/dist.md).
  const std::map<std::string, FeatureType>& types() const { return types_; }
  void Seed(std::map<std::string, FeatureType> types) { types_ = std::move(types); }

 private:
  // A field's values in the feature type its first occurrence fixed.
  struct Feature {
    FeatureType type = FeatureType::kNone;
    std::vector<std::string> bytes;
    std::vector<int64_t> int64s;
    std::vector<float> floats;
  };
  // The values as that type, or why this line cannot give them: another type, or a value
  // the type cannot store faithfully.
  Result<Feature> Typed(const std::string& name, FieldValues f) const;
  void Add(const std::string& name, Feature* f, format::ExampleBuilder* example) const;

  const std::string text_field_;
  const bool omit_text_;
  std::map<std::string, FeatureType> types_;  // fixed by each feature's first occurrence
  std::map<std::string, LeftOut> left_out_;
};

Status JsonlConverter::Convert(std::string_view line, uint64_t line_number,
                               format::ExampleBuilder* example, std::string* text_out) {
  Json object;
  LineParser parser(&object);
  try {
    Json::sax_parse(line, &parser);
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("invalid JSON: ") + e.what());
  }
  if (!object.is_object()) return InvalidArgument("not a JSON object");
  SLUICE_RETURN_IF_ERROR(parser.TooLarge());
  auto text = object.find(text_field_);
  if (text == object.end()) return InvalidArgument("no \"" + text_field_ + "\" field");
  if (!text->is_string()) return InvalidArgument("\"" + text_field_ + "\" is not a string");

  std::map<std::string, Feature> fields;
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
    SLUICE_ASSIGN_OR_RETURN(Feature feature, Typed(name, std::move(*f)));
    fields.emplace(name, std::move(feature));
  }
  example->Clear();
  for (auto& [name, f] : fields) {
    types_.emplace(name, f.type);  // keeps an existing (possibly wider) type
    Add(name, &f, example);
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

Result<JsonlConverter::Feature> JsonlConverter::Typed(const std::string& name,
                                                      FieldValues f) const {
  Feature out;
  auto known = types_.find(name);
  out.type = known == types_.end() ? f.type : known->second;
  const bool widens = out.type == FeatureType::kFloat && f.type == FeatureType::kInt64;
  if (out.type != f.type && !widens) {
    return InvalidArgument("field \"" + name + "\" is " + std::string(FeatureTypeName(f.type)) +
                           " here but " + std::string(FeatureTypeName(out.type)) +
                           " in earlier lines (write 1.0, not 1, for a float field)");
  }
  switch (out.type) {
    case FeatureType::kBytes:
      out.bytes = std::move(f.bytes);
      break;
    case FeatureType::kInt64:
      out.int64s = Int64s(f.numbers);
      break;
    case FeatureType::kFloat: {
      auto floats = Floats(f.numbers);
      if (!floats.ok()) {
        return InvalidArgument("field \"" + name + "\" (float): " + floats.status().message());
      }
      out.floats = std::move(*floats);
      break;
    }
    case FeatureType::kNone:
      break;
  }
  return out;
}

void JsonlConverter::Add(const std::string& name, Feature* f,
                         format::ExampleBuilder* example) const {
  switch (f->type) {
    case FeatureType::kBytes:
      example->AddBytes(name, std::move(f->bytes));
      break;
    case FeatureType::kInt64:
      example->AddInt64s(name, std::move(f->int64s));
      break;
    case FeatureType::kFloat:
      example->AddFloats(name, std::move(f->floats));
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

// Every input file in order through one converter into `sink`.
Status ConvertFiles(const JsonlOptions& opts, const std::vector<dist::InputFile>& files,
                    LineSink* sink, TokenizedWriter* tokenized, ConvertSummary* summary) {
  JsonlConverter converter(opts.text_field, OmitsText(opts));
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
  SLUICE_ASSIGN_OR_RETURN(auto writer, TokenizedWriter::Open(opts.tokenize, files.front().path, out,
                                                             opts.output, opts.text_field));
  TokenizedSink sink(writer.get());
  SLUICE_RETURN_IF_ERROR(ConvertFiles(opts, files, &sink, writer.get(), summary));
  summary->records = 0;  // the writer counts what it wrote (skips and splits included)
  return writer->Finish("jsonl", summary);
}

Status ConvertPlain(const JsonlOptions& opts, const Location& out,
                    const std::vector<dist::InputFile>& files, ConvertSummary* summary) {
  SLUICE_ASSIGN_OR_RETURN(auto writer, OpenShardWriter(out, opts.output, "sluice convert jsonl"));
  ShardSink sink(writer.get());
  SLUICE_RETURN_IF_ERROR(ConvertFiles(opts, files, &sink, nullptr, summary));
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
// the fields it meets first by itself; Revise then converts again, seeded with the types the
// earlier tasks fixed, every task that typed a field otherwise (or was seeded otherwise),
// so that the dataset is typed as one process reading the files in order types it.
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
    JsonlConverter converter(opts_.text_field, OmitsText(opts_));
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
                   {"hint", hint.empty() ? Json() : Json(hint)},
                   {"notes", converter.Notes()}};
    return result.dump();
  }

  Result<std::map<dist::TaskId, std::string>> Revise(
      const std::vector<std::string>& results) override {
    std::map<dist::TaskId, std::string> redo;
    std::map<std::string, FeatureType> fixed;  // by the tasks before
    for (dist::TaskId t = 0; t < results.size(); ++t) {
      Json r = Json::parse(results[t], nullptr, false);
      if (!r.is_object()) return DataLoss("malformed result of task " + std::to_string(t));
      std::map<std::string, FeatureType> types = TypesFromJson(r["types"]);
      std::string expected = TypesToJson(fixed);
      bool agrees = true;
      if (r["hint"].is_string()) {
        agrees = r["hint"].get<std::string>() == expected;
      } else {
        for (const auto& [name, type] : types) {
          auto it = fixed.find(name);
          if (it != fixed.end() && it->second != type) agrees = false;
        }
      }
      if (!agrees) redo[t] = expected;
      types.insert(fixed.begin(), fixed.end());  // the earlier type wins
      fixed = std::move(types);
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
  cmd->callback([opts, exit_code] { *exit_code = RunConvertJsonl(*opts); });
}

}  // namespace sluice::cli
