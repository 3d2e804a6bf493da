// `sluice convert images DIR OUT`: an ImageFolder (DIR/<class>/<image>) to shards of
// tf.train.Example records, validated and written in a deterministic order.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <span>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/convert_job.h"
#include "cli/ordered_parallel.h"
#include "cli/progress.h"
#include "sluice/base/thread_pool.h"
#include "sluice/format/example.h"
#include "sluice/vision/image_info.h"

namespace sluice::cli {
namespace {

struct ImagesOptions {
  std::string dir;
  std::string out;
  OutputOptions output;
  size_t threads = ThreadPool::DefaultThreads();  // Default: the CPUs this process may use
  bool no_verify = false;                         // Default: decode every image to validate it
  ConvertJobFlags job;                            // under mpirun/srun
  bool strict = false;                            // --strict: a skipped image fails the run
};

struct ImageFile {
  std::string path;      // as handed to the file system
  std::string relative;  // relative to DIR: "<class>/<...>/<name>"
  int64_t label = 0;
  uint64_t bytes = 0;
};

struct ImageFolder {
  std::vector<std::string> classes;  // sorted; label = position
  std::vector<ImageFile> files;      // by label, then by relative path
  uint64_t ignored = 0;              // files without an image extension
};

bool HasImageExtension(std::string_view name) {
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return false;
  std::string ext(name.substr(dot + 1));
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "jpg" || ext == "jpeg" || ext == "png";
}

bool IsHidden(std::string_view path) { return io::Basename(path).front() == '.'; }

// Collects the images under `dir` (recursively, like torchvision's ImageFolder).
Status CollectImages(io::FileSystem* fs, const std::string& dir, const std::string& relative,
                     int64_t label, ImageFolder* folder) {
  SLUICE_ASSIGN_OR_RETURN(auto entries, fs->List(dir));
  for (const auto& e : entries) {
    if (IsHidden(e.path)) continue;
    std::string rel = relative + "/" + std::string(io::Basename(e.path));
    if (e.is_directory) {
      SLUICE_RETURN_IF_ERROR(CollectImages(fs, e.path, rel, label, folder));
    } else if (HasImageExtension(e.path)) {
      folder->files.push_back({e.path, rel, label, e.size});
    } else {
      ++folder->ignored;
    }
  }
  return Status::OK();
}

Result<ImageFolder> ListImageFolder(io::FileSystem* fs, const std::string& root) {
  SLUICE_ASSIGN_OR_RETURN(auto entries, fs->List(root));
  ImageFolder folder;
  for (const auto& e : entries) {  // List is sorted by name, so labels follow name order
    if (!e.is_directory || IsHidden(e.path)) continue;
    std::string name(io::Basename(e.path));
    size_t first = folder.files.size();
    SLUICE_RETURN_IF_ERROR(
        CollectImages(fs, e.path, name, static_cast<int64_t>(folder.classes.size()), &folder));
    std::sort(folder.files.begin() + static_cast<ptrdiff_t>(first), folder.files.end(),
              [](const ImageFile& a, const ImageFile& b) { return a.relative < b.relative; });
    folder.classes.push_back(std::move(name));
  }
  if (folder.classes.empty()) {
    return NotFound(root + ": no class folders (expected " + root + "/<class>/<image>)");
  }
  if (folder.files.empty()) return NotFound(root + ": no .jpg, .jpeg or .png files");
  return folder;
}

// One input's outcome: a serialized Example, or the reason it is left out.
struct Converted {
  std::string record;
  std::string skip_reason;  // non-empty: skipped
  uint64_t bytes_in = 0;
};

Converted ConvertImage(io::FileSystem* fs, const ImageFile& file, bool verify) {
  Converted out;
  auto bytes = fs->ReadAll(file.path);
  if (!bytes.ok()) {
    out.skip_reason = bytes.status().message();
    return out;
  }
  out.bytes_in = bytes->size();
  // Without --no-verify-images every pixel is decoded; with it, the header is still read,
  // which is cheap and keeps non-images (a text file named .jpg) out.
  auto info = vision::InspectImage(*bytes, verify);
  if (!info.ok()) {
    out.skip_reason = info.status().message();
  } else if (info->format == vision::ImageFormat::kOther) {
    out.skip_reason = "not a JPEG or PNG image";
  }
  if (!out.skip_reason.empty()) return out;
  format::ExampleBuilder example;
  example.AddBytes("image/encoded", std::vector<std::string>{std::move(*bytes)})
      .AddBytes("image/format", vision::ImageFormatName(info->format))
      .AddInt64s("image/class/label", {file.label})
      .AddBytes("image/filename", file.relative)
      .AddInt64s("image/height", {info->height})
      .AddInt64s("image/width", {info->width});
  example.SerializeTo(&out.record);
  return out;
}

std::map<std::string, format::FeatureSchema> ImageSchema() {
  using format::FeatureType;
  return {
      {"image/encoded", {FeatureType::kBytes, 1}},     {"image/format", {FeatureType::kBytes, 1}},
      {"image/class/label", {FeatureType::kInt64, 1}}, {"image/filename", {FeatureType::kBytes, 1}},
      {"image/height", {FeatureType::kInt64, 1}},      {"image/width", {FeatureType::kInt64, 1}}};
}

std::string ClassesText(const std::vector<std::string>& classes) {
  std::string text;
  for (const auto& c : classes) text += c + "\n";
  return text;
}

// Writes the images `files` in order; reports and counts the skipped ones. Stops when
// `cancel` is set (a job's other copy of the task was committed).
Status WriteImages(const ImagesOptions& opts, io::FileSystem* fs, std::span<const ImageFile> files,
                   format::ShardWriter* writer, ConvertSummary* summary,
                   const io::CancelToken* cancel = nullptr) {
  ProgressBar progress("converting images", files.size());
  Status status;
  std::function<Converted(size_t)> produce = [&](size_t i) {
    return ConvertImage(fs, files[i], !opts.no_verify);
  };
  std::function<bool(size_t, Converted &&)> consume = [&](size_t i, Converted&& c) {
    if (cancel != nullptr && cancel->cancelled()) {
      status = Cancelled("another copy of the task was committed");
      return false;
    }
    summary->bytes_in += c.bytes_in;
    if (!c.skip_reason.empty() && opts.strict) {
      status = StrictFailure(files[i].path, c.skip_reason);
      return false;
    }
    if (!c.skip_reason.empty()) {
      progress.Clear();
      std::fprintf(stderr, "sluice: skipped %s: %s\n", files[i].path.c_str(),
                   c.skip_reason.c_str());
      ++summary->skipped;
    } else {
      status = writer->Write(c.record);
      if (!status.ok()) return false;
      ++summary->records;
    }
    progress.Update(i + 1, summary->bytes_in);
    return true;
  };
  OrderedParallelMap(files.size(), opts.threads, opts.threads * 8, produce, consume);
  return status;
}

std::string IgnoredNote(const ImageFolder& folder) {
  return std::to_string(folder.ignored) + " file(s) without a .jpg/.jpeg/.png extension ignored";
}

// Under mpirun/srun: runs of consecutive images are the tasks; every rank lists the folder.
class ImagesJob final : public dist::TaskConverter {
 public:
  ImagesJob(const ImagesOptions& opts, io::FileSystem* fs, ImageFolder folder)
      : opts_(opts), fs_(fs), folder_(std::move(folder)) {}

  TaskPlan Plan() const {
    return [this](int ranks) -> Result<std::vector<dist::TaskSpec>> {
      std::vector<uint64_t> bytes;
      uint64_t total = 0;
      for (const ImageFile& f : folder_.files) total += bytes.emplace_back(f.bytes);
      SLUICE_ASSIGN_OR_RETURN(uint64_t task_bytes, TaskBytesFor(opts_.job, total, ranks));
      std::vector<dist::TaskSpec> tasks;
      for (auto [first, last] : dist::GroupItems(bytes, task_bytes)) {
        dist::TaskSpec& t = tasks.emplace_back();
        t.id = tasks.size() - 1;
        t.input = std::to_string(first) + " " + std::to_string(last);
        for (size_t i = first; i < last; ++i) t.bytes += bytes[i];
      }
      return tasks;
    };
  }

  Result<std::string> Convert(const dist::TaskSpec& task, const std::string&,
                              format::ShardWriter* out, const io::CancelToken& cancel) override {
    unsigned long long first = 0, last = 0;
    if (std::sscanf(task.input.c_str(), "%llu %llu", &first, &last) != 2 || first > last ||
        last > folder_.files.size()) {
      return Internal("malformed images task \"" + task.input + "\"");
    }
    ConvertSummary c;
    std::span<const ImageFile> files(folder_.files);
    SLUICE_RETURN_IF_ERROR(
        WriteImages(opts_, fs_, files.subspan(first, last - first), out, &c, &cancel));
    return "{\"records\":" + std::to_string(c.records) +
           ",\"skipped\":" + std::to_string(c.skipped) +
           ",\"bytes_in\":" + std::to_string(c.bytes_in) + "}";
  }

  Status Finish(const std::vector<std::string>& results, dist::JobOutput* out,
                format::Manifest* manifest) override {
    uint64_t records = 0;
    for (const std::string& r : results) records += TaskCounts::Of(r).records;
    if (records == 0) return DataLoss(opts_.dir + ": every image was skipped");
    SLUICE_ASSIGN_OR_RETURN(std::string classes,
                            out->WriteSideFile("classes", ".txt", ClassesText(folder_.classes)));
    manifest->features = ImageSchema();
    manifest->metadata = {{"source", "images"},
                          {"classes_file", classes},
                          {"num_classes", std::to_string(folder_.classes.size())}};
    if (folder_.ignored > 0) notes.push_back(IgnoredNote(folder_));
    return Status::OK();
  }

  std::vector<std::string> notes;

 private:
  const ImagesOptions& opts_;
  io::FileSystem* fs_;
  const ImageFolder folder_;
};

int RunImagesJob(const ImagesOptions& opts) {
  auto in = Locate(opts.dir);
  if (!in.ok()) return ReportError(in.status());
  auto folder = ListImageFolder(in->fs, in->path);
  if (!folder.ok()) return ReportError(folder.status());
  std::vector<dist::InputFile> files;  // what makes a rerun the same job, with the options
  for (const ImageFile& f : folder->files) files.push_back({f.relative, f.bytes});
  std::string options = (opts.no_verify ? "no-verify " : "") + opts.dir;
  ImagesJob job(opts, in->fs, std::move(*folder));
  ConvertJobSpec spec{"sluice convert images", opts.out, opts.output, opts.job, options};
  return RunConvertCommand(spec, files, job.Plan(), &job, &job.notes);
}

int RunConvertImages(const ImagesOptions& opts) {
  if (UnderJobLauncher() || opts.job.output.table) return RunImagesJob(opts);
  Stopwatch clock;
  auto in = Locate(opts.dir);
  if (!in.ok()) return ReportError(in.status());
  auto out = Locate(opts.out);
  if (!out.ok()) return ReportError(out.status());
  auto folder = ListImageFolder(in->fs, in->path);
  if (!folder.ok()) return ReportError(folder.status());
  auto writer = OpenShardWriter(*out, opts.output, "sluice convert images");
  if (!writer.ok()) return ReportError(writer.status());

  ConvertSummary summary;
  Status s = WriteImages(opts, in->fs, folder->files, writer->get(), &summary);
  if (s.ok() && summary.records == 0) s = DataLoss(opts.dir + ": every image was skipped");
  if (!s.ok()) return ReportError(s);  // the writer is destroyed unclosed: nothing stays

  // The class list is a file of the run, published with the shards (and replaced with
  // them by --overwrite): metadata "classes_file" names it.
  auto classes = (*writer)->WriteSideFile("classes", ".txt", ClassesText(folder->classes));
  if (!classes.ok()) return ReportError(classes.status());
  (*writer)->SetFeatures(ImageSchema());
  (*writer)->SetMetadata("source", "images");
  (*writer)->SetMetadata("classes_file", *classes);
  (*writer)->SetMetadata("num_classes", std::to_string(folder->classes.size()));
  s = (*writer)->Close();
  if (!s.ok()) return ReportError(s);
  summary.shards = (*writer)->manifest().shards.size();
  for (const auto& shard : (*writer)->manifest().shards) summary.bytes_out += shard.file_bytes;
  summary.seconds = clock.seconds();
  if (folder->ignored > 0) {
    summary.notes.push_back(IgnoredNote(*folder));
  }
  PrintSummary(summary);
  return kExitOk;
}

}  // namespace

void AddConvertImagesCommand(CLI::App* convert, int* exit_code) {
  auto opts = std::make_shared<ImagesOptions>();
  CLI::App* cmd = convert->add_subcommand(
      "images", "Convert an ImageFolder (DIR/<class>/<image>.jpg|png) into shards");
  cmd->footer(
      "Class folders sorted by name get labels 0..K-1 (listed in OUT/classes-<run>.txt, named "
      "by the manifest's metadata classes_file). Each record "
      "is a tf.train.Example with image/encoded (the file's bytes), image/format, "
      "image/class/label, image/filename, image/height, image/width. Unreadable or "
      "undecodable files are reported and skipped; the exit code is then still 0, with a "
      "warning line (--strict: exit 1 instead, nothing published).");
  cmd->add_option("DIR", opts->dir, "the image folder")->required();
  cmd->add_option("OUT", opts->out, "output directory for shards and dataset.json")->required();
  AddOutputOptions(cmd, &opts->output);
  cmd->add_option("--threads", opts->threads, "threads reading and validating images")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--no-verify-images", opts->no_verify,
                "only read image headers instead of decoding every image");
  AddConvertJobFlags(cmd, &opts->job);
  AddStrictFlag(cmd, &opts->strict);
  cmd->callback([opts, exit_code] { *exit_code = RunConvertImages(*opts); });
}

}  // namespace sluice::cli
