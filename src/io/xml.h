// A small element tree for the XML documents S3 returns (listings, errors, multipart
// replies), parsed with expat. Only elements and their text are kept: attributes, comments
// and namespaces do not matter to those documents. Limits keep hostile input cheap.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/status.h"

namespace sluice::io {

struct XmlElement {
  std::string name;  // as written, without namespace handling ("ListBucketResult")
  std::string text;  // character data directly inside this element, concatenated
  std::vector<XmlElement> children;

  // The first child called `name`, or nullptr.
  const XmlElement* Child(std::string_view name) const;
  // The text of the first child called `name`, or "" when there is none.
  const std::string& ChildText(std::string_view name) const;
};

// Parses a whole document. DataLoss naming `source` and the line on malformed XML, on nesting
// deeper than 32 levels or on more than 1,000,000 elements.
Result<XmlElement> ParseXml(std::string_view document, std::string_view source);

// Escapes &, <, >, ", ' for element text.
std::string XmlEscape(std::string_view text);

}  // namespace sluice::io
