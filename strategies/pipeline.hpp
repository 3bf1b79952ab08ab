#pragma once
// A pass pipeline as data: the passes to run, in order, each with its arguments, and the
// text form scenario files write and every report echoes (LLVM's -passes= strings):
//
//   pipeline := pass ( ',' pass )*
//   pass     := NAME [ '(' arg ( ',' arg )* ')' ]
//   arg      := VALUE | NAME '=' VALUE
//   NAME     := [a-z0-9] [a-z0-9_-]*        VALUE := [A-Za-z0-9_.+-]+
//
// e.g. "tensor(8,sp),pipeline(4,v=5),data(16),zero(1),recompute(every-k,k=2),1f1b".
// No spaces. This header is the syntax only; what names and arguments mean is the
// registry's (strategies/registry.hpp: resolve, check_pipeline).
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace trainsim::strategies {

struct PassArg {
  std::string key;    // empty: a positional argument
  std::string value;
  std::size_t column = 0;  // 1-based column in the parsed text (0: not parsed); not compared
  bool operator==(const PassArg& o) const { return key == o.key && value == o.value; }
};

struct PassInvocation {
  std::string name;
  std::vector<PassArg> args;
  std::size_t column = 0;  // 1-based column of the name in the parsed text (0: not parsed); not compared
  bool operator==(const PassInvocation& o) const { return name == o.name && args == o.args; }
};

using Pipeline = std::vector<PassInvocation>;

// "name(a,k=v)", or "name" without arguments.
std::string to_string(const PassInvocation& pass);
// The invocations joined by ','.
std::string to_string(const Pipeline& pipeline);

struct PipelineSyntaxError {
  std::size_t column = 1;  // 1-based column of the offending character (size()+1: the end)
  std::string message;
};

// Parses the grammar above. to_string(parse(s)) == s for every s it accepts.
std::variant<Pipeline, PipelineSyntaxError> parse_pipeline(std::string_view text);

}  // namespace trainsim::strategies
