// text_tool: drives the text path from tests/python/test_text_spm.py.
//   text_tool encode MODEL FILE [THREADS]   one line of space-separated ids per input line
//   text_tool utf8 FILE                     "LINE OFFSET" (1-based line, byte in line) for
//                                           every line that is not valid UTF-8
//   text_tool cache MODEL FILE PREFIX       writes a token cache, one document per line
// Lines are separated by '\n'; a final '\n' ends the last line (as getline reads them).
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/io/file_system.h"
#include "sluice/text/plain_text.h"
#include "sluice/text/token_cache.h"
#include "sluice/text/tokenizer.h"
#include "sluice/text/utf8.h"

namespace {

using sluice::Status;

// The lines of `data`, as getline reads them (sluice::text::SplitText, TextUnit::kLine).
std::vector<std::string_view> SplitLines(std::string_view data) {
  std::vector<std::string_view> lines;
  for (const auto& doc : sluice::text::SplitText(data, sluice::text::TextUnit::kLine)) {
    lines.push_back(doc.text);
  }
  return lines;
}

int Fail(const Status& st) {
  std::fprintf(stderr, "text_tool: %s\n", st.ToString().c_str());
  return 1;
}

int Encode(const std::string& model, const std::string& file, size_t threads) {
  auto tok = sluice::text::Tokenizer::Open(sluice::io::LocalFileSystem(), model);
  if (!tok.ok()) return Fail(tok.status());
  auto data = sluice::io::LocalFileSystem()->ReadAll(file);
  if (!data.ok()) return Fail(data.status());
  const auto lines = SplitLines(*data);
  sluice::text::RaggedIds ids;
  if (Status st = (*tok)->EncodeBatch(lines, threads, &ids); !st.ok()) return Fail(st);
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    out += fmt::format("{}\n", fmt::join(ids[i], " "));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int CheckUtf8(const std::string& file) {
  auto data = sluice::io::LocalFileSystem()->ReadAll(file);
  if (!data.ok()) return Fail(data.status());
  const auto lines = SplitLines(*data);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (auto bad = sluice::text::FindInvalidUtf8(lines[i])) std::printf("%zu %zu\n", i + 1, *bad);
  }
  return 0;
}

int WriteCache(const std::string& model, const std::string& file, const std::string& prefix) {
  auto* fs = sluice::io::LocalFileSystem();
  auto tok = sluice::text::Tokenizer::Open(fs, model);
  if (!tok.ok()) return Fail(tok.status());
  auto data = fs->ReadAll(file);
  if (!data.ok()) return Fail(data.status());
  sluice::text::RaggedIds ids;
  if (Status st = (*tok)->EncodeBatch(SplitLines(*data), 0, &ids); !st.ok()) return Fail(st);
  auto writer = sluice::text::TokenCacheWriter::Create(fs, prefix, (*tok)->vocab_size());
  if (!writer.ok()) return Fail(writer.status());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (Status st = (*writer)->Append(ids[i]); !st.ok()) return Fail(st);
  }
  if (Status st = (*writer)->Close(); !st.ok()) return Fail(st);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 3 && args[0] == "encode") {
    return Encode(args[1], args[2], args.size() > 3 ? std::stoul(args[3]) : 1);
  }
  if (args.size() == 2 && args[0] == "utf8") return CheckUtf8(args[1]);
  if (args.size() == 4 && args[0] == "cache") return WriteCache(args[1], args[2], args[3]);
  std::fprintf(stderr,
               "usage: text_tool encode MODEL FILE [THREADS] | utf8 FILE | "
               "cache MODEL FILE PREFIX\n");
  return 2;
}
