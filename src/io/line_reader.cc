#include "sluice/io/line_reader.h"

namespace sluice::io {

Result<std::unique_ptr<LineReader>> LineReader::Open(FileSystem* fs, const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(auto file, fs->OpenForRead(path));
  return std::unique_ptr<LineReader>(new LineReader(std::move(file)));
}

Result<bool> LineReader::Fill() {
  if (file_offset_ >= file_->size()) return false;
  buffer_.erase(0, pos_);
  pos_ = 0;
  scratch_.resize(kReadBytes);
  SLUICE_ASSIGN_OR_RETURN(ByteView got, file_->Read(file_offset_, kReadBytes, scratch_.data()));
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
