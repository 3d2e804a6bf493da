// ParseXml on expat: start/end handlers maintain a stack of open elements.
#include "io/xml.h"

#include <expat.h>

namespace sluice::io {

namespace {

constexpr size_t kMaxDepth = 32;
constexpr size_t kMaxElements = 1000000;

struct Builder {
  XmlElement root;
  std::vector<XmlElement*> open;  // innermost last; open[0] is a sentinel holding the root
  size_t elements = 0;
  std::string error;
  XML_Parser parser = nullptr;

  void Fail(std::string why) {
    if (error.empty()) error = std::move(why);
    XML_StopParser(parser, XML_FALSE);
  }
};

void OnStart(void* user, const XML_Char* name, const XML_Char**) {
  auto* b = static_cast<Builder*>(user);
  if (b->open.size() > kMaxDepth) return b->Fail("elements nested deeper than 32 levels");
  if (++b->elements > kMaxElements) return b->Fail("more than 1000000 elements");
  XmlElement* parent = b->open.back();
  parent->children.emplace_back();
  XmlElement* e = &parent->children.back();
  e->name = name;
  b->open.push_back(e);
}

void OnEnd(void* user, const XML_Char*) {
  auto* b = static_cast<Builder*>(user);
  if (b->open.size() > 1) b->open.pop_back();
}

void OnText(void* user, const XML_Char* s, int len) {
  auto* b = static_cast<Builder*>(user);
  if (b->open.size() > 1) b->open.back()->text.append(s, static_cast<size_t>(len));
}

}  // namespace

const XmlElement* XmlElement::Child(std::string_view n) const {
  for (const XmlElement& c : children) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

const std::string& XmlElement::ChildText(std::string_view n) const {
  static const std::string kEmpty;
  const XmlElement* c = Child(n);
  return c != nullptr ? c->text : kEmpty;
}

Result<XmlElement> ParseXml(std::string_view document, std::string_view source) {
  Builder b;
  XmlElement sentinel;
  b.open.push_back(&sentinel);
  XML_Parser parser = XML_ParserCreate("UTF-8");
  if (parser == nullptr) return Internal("expat: out of memory");
  b.parser = parser;
  XML_SetUserData(parser, &b);
  XML_SetElementHandler(parser, &OnStart, &OnEnd);
  XML_SetCharacterDataHandler(parser, &OnText);
  // Children are appended to vectors, which move elements: pointers into the tree are only
  // valid for the innermost open path, which is never reallocated while open (only the
  // parent's vector grows, and a parent gets a new child only after the previous one closed).
  const XML_Status status =
      XML_Parse(parser, document.data(), static_cast<int>(document.size()), XML_TRUE);
  std::string error = b.error;
  const auto line = XML_GetCurrentLineNumber(parser);
  if (status != XML_STATUS_OK && error.empty()) error = XML_ErrorString(XML_GetErrorCode(parser));
  XML_ParserFree(parser);
  if (!error.empty()) {
    return DataLoss(std::string(source) + ": line " + std::to_string(line) +
                    ": invalid XML reply (" + error + ")");
  }
  if (sentinel.children.size() != 1) {
    return DataLoss(std::string(source) + ": XML reply has no root element");
  }
  return std::move(sentinel.children.front());
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace sluice::io
