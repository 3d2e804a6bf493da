// LineReader: a text file line by line through FileSystem, in large positional reads,
// so that multi-gigabyte JSON-lines files stream in constant memory.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::io {

class LineReader {
 public:
  // A longer line is an error rather than an unbounded buffer.
  static constexpr size_t kMaxLineBytes = size_t{256} << 20;  // 256 MiB

  static Result<std::unique_ptr<LineReader>> Open(FileSystem* fs, const std::string& path);
  // The lines of the bytes [begin, end) of `path`, a range that starts and ends at line
  // boundaries (LineAlignedRange): a piece of a large file for one task of a distributed job.
  static Result<std::unique_ptr<LineReader>> Open(FileSystem* fs, const std::string& path,
                                                  uint64_t begin, uint64_t end);

  // The next line without its "\n" or "\r\n", valid until the next call. False at the end
  // of the file (a last line without "\n" is still a line).
  Result<bool> Next(std::string_view* line);
  uint64_t line_number() const { return line_number_; }  // 1-based, of the last line
  uint64_t bytes_consumed() const { return consumed_; }  // since the range's start
  uint64_t next_offset() const { return begin_ + consumed_; }  // in the file, of the next line
  uint64_t file_size() const { return file_->size(); }

 private:
  LineReader(std::unique_ptr<RandomAccessFile> file, uint64_t begin, uint64_t end)
      : file_(std::move(file)), begin_(begin), end_(end), file_offset_(begin) {}
  // Appends the next chunk of the file to buffer_; false at end of file.
  Result<bool> Fill();

  static constexpr size_t kReadBytes = size_t{1} << 20;
  std::unique_ptr<RandomAccessFile> file_;
  const uint64_t begin_, end_;  // the bytes read: the whole file, or a task's range
  std::string buffer_;  // unconsumed bytes start at pos_
  size_t pos_ = 0;
  size_t scanned_ = 0;        // bytes after pos_ already known to hold no '\n'
  uint64_t file_offset_;  // next offset to read
  uint64_t consumed_ = 0;
  uint64_t line_number_ = 0;
  std::string scratch_;
};

// The piece of `file` that the byte range [start, end) stands for when a large text file is
// cut into ranges at arbitrary offsets (Hadoop's rule for input splits): the lines that
// START in [start, end), i.e. from the first line start at or after `start` up to the end of
// the line holding byte end - 1. Consecutive ranges give consecutive pieces that cover every
// line exactly once; a range inside one long line is empty (first == second). A line
// longer than LineReader::kMaxLineBytes is ResourceExhausted.
Result<std::pair<uint64_t, uint64_t>> LineAlignedRange(const RandomAccessFile& file, uint64_t start,
                                                       uint64_t end);

}  // namespace sluice::io
