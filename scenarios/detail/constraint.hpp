#pragma once
// A sweep constraint, "EXPR OP EXPR" over numbers, quoted strings and scalar field paths
// (scenario.proto: Sweep.constraint), parsed once and evaluated per variant.
#include <cstddef>
#include <memory>
#include <string>
#include <variant>

#include "scenarios/scenario.pb.h"

namespace trainsim::scenarios::detail {

class Constraint {
 public:
  struct ParseError {
    std::size_t offset;  // byte of the constraint text where the problem starts
    std::string message;
  };
  // The constraint, or where and why it does not parse.
  static std::variant<std::unique_ptr<Constraint>, ParseError> parse(const std::string& text);

  virtual ~Constraint() = default;
  // True when the variant keeps the constraint (a division by zero breaks it).
  virtual bool holds(const Scenario& variant) const = 0;
};

}  // namespace trainsim::scenarios::detail
