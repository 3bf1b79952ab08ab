#include "scenarios/detail/parse.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>

#include "scenarios/detail/schema.hpp"

namespace trainsim::scenarios::detail {
namespace {

namespace pb = google::protobuf;

// The schema nests three messages deep (cluster.fabric.fat_tree); anything far deeper is
// not a scenario. Protobuf 3.21's text parser skips unknown fields recursively with no
// depth limit, so deep nesting must be refused before it runs or it overflows the stack.
constexpr int MAX_TEXT_DEPTH = 16;
// Beyond this many parse errors the rest are noise from the same cause.
constexpr std::size_t MAX_PARSE_DIAGNOSTICS = 50;

const std::vector<std::pair<std::string_view, Format>>& extensions() {
  static const std::vector<std::pair<std::string_view, Format>> table = {
      {".textproto", Format::TEXT}, {".txtpb", Format::TEXT}, {".pbtxt", Format::TEXT},
      {".textpb", Format::TEXT},    {".json", Format::JSON},
  };
  return table;
}

std::string line_of(const std::string& text, int line0) {
  std::size_t begin = 0;
  for (int i = 0; i < line0; ++i) {
    begin = text.find('\n', begin);
    if (begin == std::string::npos) return "";
    ++begin;
  }
  std::size_t end = text.find('\n', begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// Columns count as protobuf's tokenizer counts them (and GCC's diagnostics): a tab
// advances to the next multiple of 8, any other byte by one.
constexpr int TAB_WIDTH = 8;

int advance(int column, char c) { return c == '\t' ? column + TAB_WIDTH - column % TAB_WIDTH : column + 1; }

// 0-based column of byte `offset` of `line`.
int column_of(std::string_view line, std::size_t offset) {
  int column = 0;
  for (std::size_t i = 0; i < offset && i < line.size(); ++i) column = advance(column, line[i]);
  return column;
}

// The byte of `line` at 0-based column `column` (line.size() past its end).
std::size_t byte_at(std::string_view line, int column) {
  int at = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (at >= column) return i;
    at = advance(at, line[i]);
  }
  return line.size();
}

// 1-based line and column of byte `offset`.
std::pair<int, int> position_of(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, column_of(std::string_view(text).substr(line_start), offset - line_start) + 1};
}

// Splits `s` as prefix + first + middle + second + suffix (the middle found from the left,
// or from the right when `last_middle`). Plain string matching rather than std::regex:
// the messages quote user input, and libstdc++'s regex recurses per character.
bool split(std::string_view s, std::string_view prefix, std::string_view middle, std::string_view suffix,
           std::string& first, std::string& second, bool last_middle = false) {
  if (!s.starts_with(prefix) || !s.ends_with(suffix) || s.size() < prefix.size() + suffix.size()) return false;
  s = s.substr(prefix.size(), s.size() - prefix.size() - suffix.size());
  std::size_t at = last_middle ? s.rfind(middle) : s.find(middle);
  if (at == std::string_view::npos) return false;
  first = s.substr(0, at);
  second = s.substr(at + middle.size());
  return true;
}

// Collects the text parser's reports as Diagnostics, rewording the ones a user meets
// most (unknown field, unknown enum value) to name the field path and the valid choices.
class TextErrorCollector final : public pb::io::ErrorCollector {
 public:
  TextErrorCollector(const std::string& text, const std::string& file, std::vector<Diagnostic>& out)
      : text_(text), file_(file), out_(out) {}

  // Unknown fields arrive as warnings when the parser is told to skip them (so that every
  // unknown field is reported, not only the first); they are still errors here.
  void AddWarning(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (message.find("has no field named") != std::string::npos) add(line, column, message);
  }

  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    ++syntax_errors_;
    add(line, column, message);
  }

  int reported() const { return reported_; }
  int syntax_errors() const { return syntax_errors_; }

 private:
  void add(int line, pb::io::ColumnNumber column, const std::string& message) {
    ++reported_;
    if (out_.size() >= MAX_PARSE_DIAGNOSTICS) return;
    Diagnostic d{file_, line >= 0 ? line + 1 : 0, line >= 0 && column >= 0 ? column + 1 : 0, "",
                 printable(message)};
    std::string first;
    std::string second;
    if (split(message, "Message type \"", "\" has no field named \"", "\".", first, second)) {
      const pb::Descriptor* type = pb::DescriptorPool::generated_pool()->FindMessageTypeByName(first);
      const std::string& name = second;
      if (type != nullptr) {
        std::string parent = path_of(type);
        d.field = parent.empty() ? printable(name, 80) : parent + "." + printable(name, 80);
        d.message = unknown_field_message(type, name, false);
      }
      point_back(d, line, column, name);
    } else if (split(message, "Unknown enumeration value of \"", "\" for field \"", "\".", first, second, true)) {
      std::vector<std::string> paths = paths_named(second);
      // Field names of enum type are unique in the schema, so the name finds the path.
      if (paths.size() == 1 && field_at(paths[0])->enum_type() != nullptr) {
        d.field = paths[0];
        d.message = unknown_enum_message(field_at(paths[0])->enum_type(), first);
      }
      point_back(d, line, column, first);
    } else if (split(message, "Non-repeated field \"", "\" is specified multiple times.", "", first, second)) {
      std::vector<std::string> paths = paths_named(first);
      d.field = paths.size() == 1 ? paths[0] : printable(first, 80);
      d.message = "given more than once (it is not a list: write it once)";
      point_back(d, line, column, first);
    }
    out_.push_back(std::move(d));
  }

  // The parser reports the token after an unknown name; point at the name itself when it
  // is on the same line.
  void point_back(Diagnostic& d, int line, int column, const std::string& name) const {
    if (line < 0 || column <= 0 || name.empty()) return;
    std::string source = line_of(text_, line);
    std::size_t end = byte_at(source, column);
    std::size_t at = source.rfind(name, end);
    if (at != std::string::npos && at + name.size() <= end) d.column = column_of(source, at) + 1;
  }

  const std::string& text_;
  const std::string& file_;
  std::vector<Diagnostic>& out_;
  int reported_ = 0;
  int syntax_errors_ = 0;
};

// Refuses nesting deeper than any scenario can have (see MAX_TEXT_DEPTH). Tokenizes as
// the text parser does so that braces inside strings and comments do not count.
bool check_depth(const std::string& text, const std::string& file, std::vector<Diagnostic>& out) {
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  SilentErrorCollector silent;
  pb::io::Tokenizer tokenizer(&input, &silent);
  tokenizer.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
  tokenizer.set_allow_f_after_float(true);
  tokenizer.set_require_space_after_number(false);
  tokenizer.set_allow_multiline_strings(true);
  int depth = 0;
  while (tokenizer.Next()) {
    const auto& token = tokenizer.current();
    if (token.type != pb::io::Tokenizer::TYPE_SYMBOL) continue;
    if (token.text == "{" || token.text == "<" || token.text == "[") {
      if (++depth > MAX_TEXT_DEPTH) {
        out.push_back({file, token.line + 1, token.column + 1, "",
                       fmt::format("nested more than {} levels deep; a scenario nests at most 3 "
                                   "(cluster {{ fabric {{ fat_tree {{ … }} }} }})",
                                   MAX_TEXT_DEPTH)});
        return false;
      }
    } else if (token.text == "}" || token.text == ">" || token.text == "]") {
      depth = std::max(0, depth - 1);
    }
  }
  return true;
}

std::string describe_type(const std::string& type) {
  if (type == "TYPE_INT64" || type == "TYPE_INT32" || type == "TYPE_UINT64" || type == "TYPE_UINT32") {
    return "an integer";
  }
  if (type == "TYPE_DOUBLE" || type == "TYPE_FLOAT") return "a number";
  if (type == "TYPE_STRING") return "a string";
  if (type == "TYPE_BOOL") return "true or false";
  return "";
}

// Rewords one JsonStringToMessage status message (protobuf 3.21's wording) as a Diagnostic.
Diagnostic json_diagnostic(const std::string& message, const std::string& text, const std::string& file) {
  Diagnostic d{file, 0, 0, "", printable(message)};
  // Syntax errors: "what\n<up to 20 bytes either side>\n<spaces>^". Finding the snippet in
  // the input recovers the position, which protobuf does not report.
  if (std::size_t first = message.find('\n'); first != std::string::npos) {
    std::size_t last = message.rfind('\n');
    std::string caret = message.substr(last + 1);
    d.message = "invalid JSON: " + printable(message.substr(0, first));
    if (last > first && !caret.empty() && caret.back() == '^') {
      std::string snippet = message.substr(first + 1, last - first - 1);
      std::size_t offset = caret.size() - 1;
      std::size_t at = text.find(snippet);
      bool unique = at != std::string::npos && text.find(snippet, at + 1) == std::string::npos;
      if (!unique && offset < 20 && text.compare(0, snippet.size(), snippet) == 0) {
        at = 0;  // the snippet starts the input when the error is within its first 20 bytes
        unique = true;
      }
      if (unique) std::tie(d.line, d.column) = position_of(text, at + offset);
    }
    return d;
  }
  std::string first;
  std::string second;
  if (message.ends_with(": Cannot find field.")) {
    // "(parent.path) name: Cannot find field." or, at the top level, "name: Cannot find field."
    std::string head = message.substr(0, message.size() - std::string_view(": Cannot find field.").size());
    std::string parent;
    std::string name = head;
    if (head.starts_with("(")) split(head, "(", ") ", "", parent, name);
    const pb::Descriptor* type = Scenario::descriptor();
    if (!parent.empty()) {
      const pb::FieldDescriptor* f = field_at(parent);
      type = f != nullptr ? f->message_type() : nullptr;
    }
    d.field = parent.empty() ? printable(name, 80) : parent + "." + printable(name, 80);
    d.message = type != nullptr ? unknown_field_message(type, name, true) : "unknown field " + quote(name);
  } else if (std::string rest; split(message, "(", "): invalid value ", "", first, rest)) {
    const std::string path = first;
    std::string value = rest;
    std::string type;
    split(rest, "", " for type ", "", value, type, true);
    if (type == "oneof" && split(value, "oneof field '_", "' is already set. Cannot set '", "'", first, second)) {
      // proto3 `optional` fields are one-field oneofs; a field given under both its proto
      // and its JSON name lands here.
      d.field = path.empty() ? first : path + "." + first;
      d.message = "given more than once (its proto and JSON names are the same field: write it once)";
      return d;
    }
    d.field = path;
    const pb::FieldDescriptor* f = field_at(path);
    if (f != nullptr && f->enum_type() != nullptr) {
      bool is_name = value.size() >= 2 && value.front() == '"' && value.back() == '"';
      d.message = unknown_enum_message(f->enum_type(), is_name ? value.substr(1, value.size() - 2) : value,
                                       !is_name);
    } else if (f != nullptr && f->message_type() != nullptr) {
      d.message = fmt::format("invalid value {}: expected an object {{ … }} with fields {}", printable(value, 80),
                              join(field_names(f->message_type())));
    } else if (std::string expected = describe_type(type); !expected.empty()) {
      d.message = fmt::format("invalid value {}: expected {}", printable(value, 80), expected);
    } else {
      d.message = fmt::format("invalid value {}", printable(value, 80));
    }
  } else if (split(message, "(", ")", "", first, second)) {
    d.field = printable(first);
    d.message = printable(second.starts_with(": ") ? second.substr(2) : second);
  } else if (message.starts_with(": ")) {
    d.message = printable(message.substr(2));
  }
  return d;
}

}  // namespace

std::optional<Format> format_for(std::string_view file) {
  std::string lower(file);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& [extension, format] : extensions()) {
    if (lower.ends_with(extension)) return format;
  }
  return std::nullopt;
}

std::string valid_extensions() {
  std::vector<std::string> names;
  for (const auto& [extension, format] : extensions()) names.emplace_back(extension);
  return join(names);
}

bool parse_text(const std::string& text, const std::string& file, Scenario& out,
                pb::TextFormat::ParseInfoTree& tree, std::vector<Diagnostic>& diagnostics) {
  if (!check_depth(text, file, diagnostics)) return false;
  std::vector<Diagnostic> strict;
  {
    TextErrorCollector errors(text, file, strict);
    pb::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    parser.WriteLocationsTo(&tree);
    parser.SetRecursionLimit(MAX_TEXT_DEPTH);
    if (parser.ParseFromString(text, &out) && strict.empty()) return true;
  }
  // The strict parse stops at the first unknown field. A second parse that skips unknown
  // fields reports them all, but only when nothing else is wrong: skipping guesses at the
  // shape of what it skips, and after a real syntax error its reports would mislead
  // ("12" taken for a field name), so then the strict parse's one error stands.
  if (!strict.empty() && strict.front().message.starts_with("unknown field")) {
    std::vector<Diagnostic> lenient;
    TextErrorCollector errors(text, file, lenient);
    pb::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    parser.AllowUnknownField(true);
    parser.SetRecursionLimit(MAX_TEXT_DEPTH);
    Scenario scratch;
    if (parser.ParseFromString(text, &scratch) && errors.syntax_errors() == 0 && !lenient.empty()) {
      diagnostics.insert(diagnostics.end(), lenient.begin(), lenient.end());
      if (errors.reported() > static_cast<int>(lenient.size())) {
        diagnostics.push_back(
            {file, 0, 0, "", fmt::format("{} more errors not shown", errors.reported() - lenient.size())});
      }
      return false;
    }
  }
  if (strict.empty()) strict.push_back({file, 0, 0, "", "could not be parsed"});
  diagnostics.insert(diagnostics.end(), strict.begin(), strict.end());
  return false;
}

bool parse_json(const std::string& text, const std::string& file, Scenario& out,
                std::vector<Diagnostic>& diagnostics) {
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = pb::util::JsonStringToMessage(text, &out, options);
  if (status.ok()) return true;
  diagnostics.push_back(json_diagnostic(std::string(status.message()), text, file));
  return false;
}

std::pair<int, int> Locator::locate(std::string_view path) const {
  std::pair<int, int> best{0, 0};
  const pb::TextFormat::ParseInfoTree* tree = tree_;
  const pb::Descriptor* type = Scenario::descriptor();
  while (tree != nullptr && type != nullptr && !path.empty()) {
    std::size_t dot = path.find('.');
    std::string name(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    // A repeated field is named with its index, "link_fault[2]".
    int index = -1;
    if (const auto open = name.find('['); open != std::string::npos && name.back() == ']') {
      index = std::atoi(name.c_str() + open + 1);
      name.erase(open);
    }
    const pb::FieldDescriptor* field = type->FindFieldByName(name);
    // The tree asserts on a repeated field without an index, and on a singular one with.
    if (field == nullptr || field->is_repeated() != (index >= 0)) break;
    pb::TextFormat::ParseLocation at = tree->GetLocation(field, index);
    if (at.line < 0) break;
    best = {at.line + 1, at.column + 1};
    if (field->message_type() == nullptr) break;
    tree = tree->GetTreeForNested(field, index);
    type = field->message_type();
  }
  return best;
}

}  // namespace trainsim::scenarios::detail
