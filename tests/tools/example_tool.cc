// Test driver for the Example codec, used by tests/python/test_example_compat.py to
// cross-check against Python protobuf:
//   example_tool decode [--sequence] FILE       prints the record's JSON form (one line)
//   example_tool encode [--sequence] JSON OUT   writes the record built from the JSON form
// FILE and OUT hold one serialized record, without TFRecord framing. Exit 1 on error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/format/example.h"
#include "sluice/format/example_json.h"

namespace {

using namespace sluice;          // NOLINT
using namespace sluice::format;  // NOLINT

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  return true;
}

Status Decode(bool sequence, const std::string& bytes) {
  if (sequence) {
    SequenceExampleView view;
    SLUICE_RETURN_IF_ERROR(view.Parse(bytes));
    std::cout << SequenceExampleToJson(view) << "\n";
  } else {
    ExampleView view;
    SLUICE_RETURN_IF_ERROR(view.Parse(bytes));
    std::cout << ExampleToJson(view) << "\n";
  }
  return Status::OK();
}

Status Encode(bool sequence, const std::string& json, const std::string& out_path) {
  std::string bytes;
  if (sequence) {
    SequenceExampleBuilder builder;
    SLUICE_RETURN_IF_ERROR(SequenceExampleFromJson(json, &builder));
    builder.SerializeTo(&bytes);
  } else {
    ExampleBuilder builder;
    SLUICE_RETURN_IF_ERROR(ExampleFromJson(json, &builder));
    builder.SerializeTo(&bytes);
  }
  std::ofstream out(out_path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) return IoError("cannot write " + out_path);
  return Status::OK();
}

int Usage() {
  std::cerr << "usage: example_tool decode [--sequence] FILE\n"
               "       example_tool encode [--sequence] JSON_FILE OUT\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool sequence = false;
  if (args.size() >= 2 && args[1] == "--sequence") {
    sequence = true;
    args.erase(args.begin() + 1);
  }
  std::string input;
  if (args.size() < 2) return Usage();
  if (!ReadFile(args[1], &input)) {
    std::cerr << "example_tool: cannot read " << args[1] << "\n";
    return 1;
  }
  Status s;
  if (args[0] == "decode" && args.size() == 2) {
    s = Decode(sequence, input);
  } else if (args[0] == "encode" && args.size() == 3) {
    s = Encode(sequence, input, args[2]);
  } else {
    return Usage();
  }
  if (!s.ok()) {
    std::cerr << "example_tool: " << args[1] << ": " << s.ToString() << "\n";
    return 1;
  }
  return 0;
}
