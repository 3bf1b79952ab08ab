#pragma once
// `trainsim diff A B`: how two scenarios' predictions differ, term by term, and which ops
// lie on each one's critical path.
#include <iosfwd>
#include <string>

#include "strategies/lower.hpp"

namespace trainsim::cli {

struct DiffOptions {
  std::string a_path, b_path;
  strategies::Fidelity fidelity = strategies::Fidelity::FAST;
  int path_ops = 8;  // ops listed per critical path
};

int diff_command(const DiffOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
