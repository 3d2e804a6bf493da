#include "sluice/io/line_reader.h"

#include <algorithm>

namespace sluice::io {

Result<std::unique_ptr<LineReader>> LineReader::Open(FileSystem* fs, const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForRead(path));
  const uint64_t size = file->size();
  return std::unique_ptr<LineReader>(new LineReader(std::move(file), 0, size));
}

Result<std::unique_ptr<LineReader>> LineReader::Open(FileSystem* fs, const std::string& path,
                                                     uint64_t begin, uint64_t end) {
  SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForRead(path));
  if (begin > end || end > file->size()) {
    return InvalidArgument(path + ": byte range " + std::to_string(begin) + ".." +
                           std::to_string(end) + " is outside the file (" +
                           std::to_string(file->size()) + " bytes; changed since the job began?)");
  }
  return std::unique_ptr<LineReader>(new LineReader(std::move(file), begin, end));
}

namespace {

// The offset of the first '\n' at or after `from`, or the file's size when there is none.
Result<uint64_t> FindNewline(const RandomAccessFile& file, uint64_t from) {
  constexpr size_t kStep = size_t{64} << 10;
  std::string buffer(kStep, '\0');
  for (uint64_t at = from; at < file.size();) {
    if (at - from > LineReader::kMaxLineBytes) {
      return ResourceExhausted(file.path() + ": the line holding byte " + std::to_string(from) +
                               " is longer than " + std::to_string(LineReader::kMaxLineBytes) +
                               " bytes");
    }
    SLUICE_ASSIGN_OR_RETURN(ByteView got, file.Read(at, kStep, buffer.data()));
    if (got.empty()) break;  // the file shrank
    size_t newline = got.find('\n');
    if (newline != ByteView::npos) return at + newline;
    at += got.size();
  }
  return file.size();
}

}  // namespace

Result<std::pair<uint64_t, uint64_t>> LineAlignedRange(const RandomAccessFile& file, uint64_t start,
                                                       uint64_t end) {
  const uint64_t size = file.size();
  end = std::min(end, size);
  start = std::min(start, end);
  auto after_newline = [&](uint64_t at) -> Result<uint64_t> {
    if (at == 0) return uint64_t{0};
    if (at >= size) return size;
    SLUICE_ASSIGN_OR_RETURN(uint64_t newline, FindNewline(file, at - 1));
    return std::min(size, newline + 1);
  };
  SLUICE_ASSIGN_OR_RETURN(uint64_t first, after_newline(start));
  SLUICE_ASSIGN_OR_RETURN(uint64_t last, after_newline(end));
  return std::make_pair(std::min(first, last), last);
}

Result<bool> LineReader::Fill() {
  if (file_offset_ >= end_) return false;
  buffer_.erase(0, pos_);
  pos_ = 0;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(kReadBytes, end_ - file_offset_));
  scratch_.resize(want);
  SLUICE_ASSIGN_OR_RETURN(ByteView got, file_->Read(file_offset_, want, scratch_.data()));
  if (got.empty()) return false;  // the file shrank since it was opened
  buffer_.append(got.data(), got.size());
  file_offset_ += got.size();
  return true;
}

Result<bool> LineReader::Next(std::string_view* line) {
  size_t newline;
  while ((newline = buffer_.find('\n', pos_ + scanned_)) == std::string::npos) {
    scanned_ = buffer_.size() - pos_;
    if (scanned_ > kMaxLineBytes) {
      return ResourceExhausted(file_->path() + ": line " + std::to_string(line_number_ + 1) +
                               " is longer than " + std::to_string(kMaxLineBytes) + " bytes");
    }
    SLUICE_ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) break;
  }
  if (newline == std::string::npos && pos_ == buffer_.size()) return false;
  size_t end = newline == std::string::npos ? buffer_.size() : newline;
  std::string_view text(buffer_.data() + pos_, end - pos_);
  size_t taken = end - pos_ + (newline == std::string::npos ? 0 : 1);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  *line = text;
  pos_ += taken;
  consumed_ += taken;
  scanned_ = 0;
  ++line_number_;
  return true;
}

}  // namespace sluice::io
