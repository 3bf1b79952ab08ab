#include "strategies/pipeline.hpp"

namespace trainsim::strategies {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool name_char(char c) { return name_start(c) || c == '_' || c == '-'; }
bool value_char(char c) { return name_char(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == '+'; }

std::string shown(std::string_view text, std::size_t i) {
  if (i >= text.size()) return "the end";
  const char c = text[i];
  if (c == ' ' || c == '\t') return "a space (the pipeline string has none)";
  return std::string("'") + c + "'";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : t_(text) {}

  std::variant<Pipeline, PipelineSyntaxError> run() {
    Pipeline out;
    if (t_.empty()) return fail("an empty pipeline: expected a pass name, e.g. \"tensor(8),pipeline(4),data(16),1f1b\"");
    while (true) {
      PassInvocation pass;
      pass.column = i_ + 1;
      if (!word(name_start, name_char, pass.name)) return fail("expected a pass name, found " + shown(t_, i_));
      if (peek('(')) {
        ++i_;
        while (true) {
          PassArg arg;
          arg.column = i_ + 1;
          if (!word(value_char, value_char, arg.value))
            return fail("expected an argument of " + pass.name + "(…), found " + shown(t_, i_));
          if (peek('=')) {
            if (!is_name(arg.value)) {
              i_ = arg.column - 1;
              return fail("\"" + arg.value + "\" is not a parameter name (lower case, digits, '-' and '_')");
            }
            ++i_;
            arg.key = std::move(arg.value);
            arg.value.clear();
            if (!word(value_char, value_char, arg.value))
              return fail("expected a value after " + arg.key + "=, found " + shown(t_, i_));
          }
          pass.args.push_back(std::move(arg));
          if (peek(',')) {
            ++i_;
            continue;
          }
          if (peek(')')) {
            ++i_;
            break;
          }
          return fail("expected ',' or ')' in the arguments of " + pass.name + ", found " + shown(t_, i_));
        }
      }
      out.push_back(std::move(pass));
      if (i_ == t_.size()) return out;
      if (!peek(',')) return fail("expected ',' between passes, found " + shown(t_, i_));
      ++i_;
    }
  }

 private:
  bool peek(char c) const { return i_ < t_.size() && t_[i_] == c; }
  bool word(bool (*first)(char), bool (*rest)(char), std::string& out) {
    if (i_ >= t_.size() || !first(t_[i_])) return false;
    const std::size_t start = i_++;
    while (i_ < t_.size() && rest(t_[i_])) ++i_;
    out.assign(t_.substr(start, i_ - start));
    return true;
  }
  static bool is_name(const std::string& s) {
    if (s.empty() || !name_start(s[0])) return false;
    for (char c : s)
      if (!name_char(c)) return false;
    return true;
  }
  PipelineSyntaxError fail(std::string message) const { return {i_ + 1, std::move(message)}; }

  std::string_view t_;
  std::size_t i_ = 0;
};

}  // namespace

std::string to_string(const PassInvocation& pass) {
  std::string out = pass.name;
  for (std::size_t i = 0; i < pass.args.size(); ++i) {
    out += i == 0 ? '(' : ',';
    if (!pass.args[i].key.empty()) out += pass.args[i].key + '=';
    out += pass.args[i].value;
  }
  if (!pass.args.empty()) out += ')';
  return out;
}

std::string to_string(const Pipeline& pipeline) {
  std::string out;
  for (const auto& p : pipeline) {
    if (!out.empty()) out += ',';
    out += to_string(p);
  }
  return out;
}

std::variant<Pipeline, PipelineSyntaxError> parse_pipeline(std::string_view text) { return Parser(text).run(); }

}  // namespace trainsim::strategies
