#include "scenarios/detail/constraint.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "scenarios/field_path.hpp"

namespace trainsim::scenarios::detail {
namespace {

// The expression as a small tree in a vector; children precede their parent.
struct Node {
  enum Kind { NUMBER, STRING, FIELD, ADD, SUB, MUL, DIV, MOD, NEG } kind = NUMBER;
  double number = 0;
  std::string text;
  FieldPath field;
  int left = -1, right = -1;

  static Node of(Kind kind, int left = -1, int right = -1) {
    Node n;
    n.kind = kind;
    n.left = left;
    n.right = right;
    return n;
  }
};

enum class Compare { EQ, NE, LT, LE, GT, GE };

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  std::optional<Constraint::ParseError> error;
  std::vector<Node> nodes;
  int lhs = -1, rhs = -1;
  Compare op = Compare::EQ;

  void run() {
    lhs = sum();
    if (error) return;
    skip();
    const std::size_t at = i_;
    static const std::pair<const char*, Compare> ops[] = {{"==", Compare::EQ}, {"!=", Compare::NE},
                                                          {"<=", Compare::LE}, {">=", Compare::GE},
                                                          {"<", Compare::LT},  {">", Compare::GT}};
    bool found = false;
    for (const auto& [word, c] : ops) {
      if (s_.compare(i_, std::char_traits<char>::length(word), word) == 0) {
        op = c;
        i_ += std::char_traits<char>::length(word);
        found = true;
        break;
      }
    }
    if (!found) return fail(at, "expected a comparison (==, !=, <, <=, >, >=)");
    rhs = sum();
    if (error) return;
    skip();
    if (i_ < s_.size()) fail(i_, fmt::format("unexpected \"{}\" after the comparison", s_.substr(i_)));
  }

 private:
  void fail(std::size_t at, std::string message) {
    if (!error) error = Constraint::ParseError{at, std::move(message)};
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  int add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size() - 1);
  }
  int sum() {
    int left = product();
    while (!error) {
      skip();
      if (i_ >= s_.size() || (s_[i_] != '+' && s_[i_] != '-')) break;
      const Node::Kind kind = s_[i_++] == '+' ? Node::ADD : Node::SUB;
      const int right = product();
      left = add(Node::of(kind, left, right));
    }
    return left;
  }
  int product() {
    int left = unary();
    while (!error) {
      skip();
      if (i_ >= s_.size() || (s_[i_] != '*' && s_[i_] != '/' && s_[i_] != '%')) break;
      const char c = s_[i_++];
      const Node::Kind kind = c == '*' ? Node::MUL : c == '/' ? Node::DIV : Node::MOD;
      const int right = unary();
      left = add(Node::of(kind, left, right));
    }
    return left;
  }
  int unary() {
    skip();
    if (i_ < s_.size() && s_[i_] == '-') {
      ++i_;
      const int inner = unary();
      return add(Node::of(Node::NEG, inner));
    }
    return primary();
  }
  int primary() {
    skip();
    if (i_ >= s_.size()) {
      fail(i_, "expected a number, a \"string\" or a field path");
      return -1;
    }
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      const int inner = sum();
      skip();
      if (i_ >= s_.size() || s_[i_] != ')') {
        fail(i_, "expected \")\"");
        return -1;
      }
      ++i_;
      return inner;
    }
    if (c == '"') {
      const std::size_t end = s_.find('"', i_ + 1);
      if (end == std::string::npos) {
        fail(i_, "unterminated string");
        return -1;
      }
      Node n = Node::of(Node::STRING);
      n.text = s_.substr(i_ + 1, end - i_ - 1);
      i_ = end + 1;
      return add(std::move(n));
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      const char* begin = s_.c_str() + i_;
      char* end = nullptr;
      const double value = std::strtod(begin, &end);
      if (end == begin || !std::isfinite(value)) {
        fail(i_, "not a number");
        return -1;
      }
      i_ += static_cast<std::size_t>(end - begin);
      Node n = Node::of(Node::NUMBER);
      n.number = value;
      return add(std::move(n));
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t begin = i_;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '.')) ++i_;
      auto resolved = resolve_field(s_.substr(begin, i_ - begin));
      if (auto* message = std::get_if<std::string>(&resolved)) {
        fail(begin, *message);
        return -1;
      }
      Node n = Node::of(Node::FIELD);
      n.field = std::get<FieldPath>(std::move(resolved));
      return add(std::move(n));
    }
    fail(i_, fmt::format("unexpected \"{}\" (expected a number, a \"string\" or a field path)", c));
    return -1;
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

class Expression final : public Constraint {
 public:
  Expression(std::vector<Node> nodes, int lhs, int rhs, Compare op)
      : nodes_(std::move(nodes)), lhs_(lhs), rhs_(rhs), op_(op) {}

  bool holds(const Scenario& variant) const override {
    bool ok = true;
    const FieldValue a = eval(lhs_, variant, ok);
    const FieldValue b = eval(rhs_, variant, ok);
    if (!ok) return false;
    if (a.index() != b.index()) return op_ == Compare::NE;  // a string is never a number
    const int order = a < b ? -1 : (b < a ? 1 : 0);
    switch (op_) {
      case Compare::EQ: return order == 0;
      case Compare::NE: return order != 0;
      case Compare::LT: return order < 0;
      case Compare::LE: return order <= 0;
      case Compare::GT: return order > 0;
      case Compare::GE: return order >= 0;
    }
    return false;
  }

 private:
  // `ok` turns false on arithmetic that has no value (on strings, division by zero).
  FieldValue eval(int i, const Scenario& v, bool& ok) const {
    const Node& n = nodes_[static_cast<std::size_t>(i)];
    switch (n.kind) {
      case Node::NUMBER: return n.number;
      case Node::STRING: return n.text;
      case Node::FIELD: return get_field(v, n.field);
      default: break;
    }
    const FieldValue l = eval(n.left, v, ok);
    const FieldValue r = n.right >= 0 ? eval(n.right, v, ok) : FieldValue(0.0);
    const double* x = std::get_if<double>(&l);
    const double* y = std::get_if<double>(&r);
    if (x == nullptr || y == nullptr) {
      ok = false;
      return 0.0;
    }
    switch (n.kind) {
      case Node::ADD: return *x + *y;
      case Node::SUB: return *x - *y;
      case Node::MUL: return *x * *y;
      case Node::NEG: return -*x;
      case Node::DIV:
        if (*y == 0) break;
        return std::trunc(*x / *y);  // integer quotient, as the layout fields are integers
      case Node::MOD:
        if (*y == 0) break;
        return std::fmod(*x, *y);
      default: break;
    }
    ok = false;
    return 0.0;
  }

  std::vector<Node> nodes_;
  int lhs_, rhs_;
  Compare op_;
};

}  // namespace

std::variant<std::unique_ptr<Constraint>, Constraint::ParseError> Constraint::parse(const std::string& text) {
  Parser p(text);
  p.run();
  if (p.error) return *p.error;
  return std::unique_ptr<Constraint>(new Expression(std::move(p.nodes), p.lhs, p.rhs, p.op));
}

}  // namespace trainsim::scenarios::detail
