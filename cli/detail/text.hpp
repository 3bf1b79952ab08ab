#pragma once
// The CLI's commands write their messages with the scenario layer's text helpers.
#include "scenarios/message_text.hpp"

namespace trainsim::cli::detail {
using scenarios::join;
using scenarios::printable;
}  // namespace trainsim::cli::detail
