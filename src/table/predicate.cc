#include "sluice/table/predicate.h"

#include <algorithm>
#include <cctype>

namespace sluice::table {
namespace {

// A hand-written tokenizer and recursive-descent parser: the grammar is a dozen lines, smaller
// than any SQL library's setup.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<FilePredicate> Parse() {
    FilePredicate p;
    SkipSpace();
    if (AtEnd()) return p;
    while (true) {
      SLUICE_ASSIGN_OR_RETURN(FilePredicate::Clause c, ParseClause());
      p.clauses.push_back(std::move(c));
      SkipSpace();
      if (AtEnd()) return p;
      if (!Keyword("AND")) return Error("expected AND or the end of the predicate");
    }
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  void SkipSpace() {
    while (!AtEnd() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  Status Error(const std::string& what) const {
    return InvalidArgument("predicate '" + std::string(text_) + "': at position " +
                           std::to_string(pos_) + ": " + what);
  }
  static bool IsWordChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  }
  // Consumes `word` (case-insensitive) when it is the next whole word.
  bool Keyword(std::string_view word) {
    SkipSpace();
    if (text_.size() - pos_ < word.size()) return false;
    for (size_t i = 0; i < word.size(); ++i) {
      if (std::toupper(static_cast<unsigned char>(text_[pos_ + i])) != word[i]) return false;
    }
    size_t end = pos_ + word.size();
    if (end < text_.size() && IsWordChar(text_[end])) return false;
    pos_ = end;
    return true;
  }
  bool Symbol(std::string_view s) {
    SkipSpace();
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  Result<std::string> Identifier() {
    SkipSpace();
    if (Symbol("`")) {  // `quoted column`
      size_t end = text_.find('`', pos_);
      if (end == std::string_view::npos) return Error("unterminated `column`");
      std::string name(text_.substr(pos_, end - pos_));
      pos_ = end + 1;
      return name;
    }
    size_t start = pos_;
    while (!AtEnd() && IsWordChar(text_[pos_])) ++pos_;
    if (start == pos_) return Error("expected a column name");
    return std::string(text_.substr(start, pos_ - start));
  }
  Result<std::string> Literal() {
    SkipSpace();
    if (Symbol("'")) {
      std::string out;
      while (true) {
        if (AtEnd()) return Error("unterminated string literal");
        char c = text_[pos_++];
        if (c != '\'') {
          out.push_back(c);
        } else if (!AtEnd() && text_[pos_] == '\'') {
          out.push_back('\'');
          ++pos_;
        } else {
          return out;
        }
      }
    }
    size_t start = pos_;
    if (!AtEnd() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
    while (!AtEnd() &&
           (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) {
      ++pos_;
    }
    if (start == pos_) return Error("expected a 'quoted' value or a number");
    return std::string(text_.substr(start, pos_ - start));
  }
  Result<std::vector<std::string>> List() {
    if (!Symbol("(")) return Error("expected ( after IN");
    std::vector<std::string> values;
    do {
      SLUICE_ASSIGN_OR_RETURN(std::string v, Literal());
      values.push_back(std::move(v));
    } while (Symbol(","));
    if (!Symbol(")")) return Error("expected , or ) in the IN list");
    return values;
  }
  Result<FilePredicate::Clause> ParseClause() {
    using Op = FilePredicate::Op;
    FilePredicate::Clause c;
    SLUICE_ASSIGN_OR_RETURN(c.column, Identifier());
    if (Keyword("IS")) {
      c.op = Keyword("NOT") ? Op::kIsNotNull : Op::kIsNull;
      if (!Keyword("NULL")) return Error("expected NULL after IS [NOT]");
      return c;
    }
    bool negated = Keyword("NOT");
    if (Keyword("IN")) {
      c.op = negated ? Op::kNotIn : Op::kIn;
      SLUICE_ASSIGN_OR_RETURN(c.values, List());
      return c;
    }
    if (negated) return Error("expected IN after NOT");
    if (Symbol("!=") || Symbol("<>")) {
      c.op = Op::kNe;
    } else if (Symbol("=")) {
      c.op = Op::kEq;
    } else {
      return Error("expected =, !=, <>, IN, NOT IN or IS [NOT] NULL after '" + c.column + "'");
    }
    SLUICE_ASSIGN_OR_RETURN(std::string v, Literal());
    c.values.push_back(std::move(v));
    return c;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string Quote(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    out.push_back(c);
    if (c == '\'') out.push_back('\'');
  }
  return out + "'";
}

bool ClauseHolds(const FilePredicate::Clause& c, const PartitionValues& values) {
  using Op = FilePredicate::Op;
  auto it = values.find(c.column);
  const bool is_null = it == values.end() || !it->second.has_value();
  if (c.op == Op::kIsNull) return is_null;
  if (c.op == Op::kIsNotNull) return !is_null;
  if (is_null) return false;
  const std::string& v = *it->second;
  bool listed = std::find(c.values.begin(), c.values.end(), v) != c.values.end();
  switch (c.op) {
    case Op::kEq:
    case Op::kIn:
      return listed;
    case Op::kNe:
    case Op::kNotIn:
      return !listed;
    default:
      return false;
  }
}

}  // namespace

Result<FilePredicate> FilePredicate::Parse(std::string_view text) { return Parser(text).Parse(); }

FilePredicate FilePredicate::Equals(const std::map<std::string, std::string>& values) {
  FilePredicate p;
  for (const auto& [column, value] : values) p.clauses.push_back({column, Op::kEq, {value}});
  return p;
}

bool FilePredicate::Matches(const PartitionValues& values) const {
  return std::all_of(clauses.begin(), clauses.end(),
                     [&](const Clause& c) { return ClauseHolds(c, values); });
}

Status FilePredicate::Validate(const std::vector<std::string>& partition_columns) const {
  for (const Clause& c : clauses) {
    if (std::find(partition_columns.begin(), partition_columns.end(), c.column) ==
        partition_columns.end()) {
      std::string known;
      for (const std::string& p : partition_columns) known += (known.empty() ? "" : ", ") + p;
      return InvalidArgument(
          "predicate " + ToString() + ": '" + c.column +
          "' is not a partition column (the table's: " + (known.empty() ? "none" : known) +
          "); sluice selects whole files by their partition values");
    }
  }
  return Status::OK();
}

std::string FilePredicate::ToString() const {
  if (clauses.empty()) return "true";
  std::string out;
  for (const Clause& c : clauses) {
    if (!out.empty()) out += " AND ";
    out += c.column;
    switch (c.op) {
      case Op::kEq:
        out += " = " + Quote(c.values[0]);
        break;
      case Op::kNe:
        out += " != " + Quote(c.values[0]);
        break;
      case Op::kIn:
      case Op::kNotIn: {
        out += c.op == Op::kIn ? " IN (" : " NOT IN (";
        for (size_t i = 0; i < c.values.size(); ++i) out += (i ? ", " : "") + Quote(c.values[i]);
        out += ")";
        break;
      }
      case Op::kIsNull:
        out += " IS NULL";
        break;
      case Op::kIsNotNull:
        out += " IS NOT NULL";
        break;
    }
  }
  return out;
}

}  // namespace sluice::table
