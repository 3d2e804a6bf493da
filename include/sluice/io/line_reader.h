// LineReader: a text file line by line through FileSystem, in large positional reads,
// so that multi-gigabyte JSON-lines files stream in constant memory.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "sluice/base/status.h"
#include "sluice/io/file_system.h"

namespace sluice::io {

class LineReader {
 public:
  // A longer line is an error rather than an unbounded buffer.
  static constexpr size_t kMaxLineBytes = size_t{256} << 20;  // 256 MiB

  static Result<std::unique_ptr<LineReader>> Open(FileSystem* fs, const std::string& path);

  // The next line without its "\n" or "\r\n", valid until the next call. False at the end
  // of the file (a last line without "\n" is still a line).
  Result<bool> Next(std::string_view* line);
  uint64_t line_number() const { return line_number_; }  // 1-based, of the last line
  uint64_t bytes_consumed() const { return consumed_; }
  uint64_t file_size() const { return file_->size(); }

 private:
  explicit LineReader(std::unique_ptr<RandomAccessFile> file) : file_(std::move(file)) {}
  // Appends the next chunk of the file to buffer_; false at end of file.
  Result<bool> Fill();

  static constexpr size_t kReadBytes = size_t{1} << 20;
  std::unique_ptr<RandomAccessFile> file_;
  std::string buffer_;  // unconsumed bytes start at pos_
  size_t pos_ = 0;
  size_t scanned_ = 0;        // bytes after pos_ already known to hold no '\n'
  uint64_t file_offset_ = 0;  // next offset to read
  uint64_t consumed_ = 0;
  uint64_t line_number_ = 0;
  std::string scratch_;
};

}  // namespace sluice::io
