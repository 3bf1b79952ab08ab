#pragma once
// How much memory a run may plan to use (--max-memory): by default a share of what this
// process can have — the machine's physical memory or its address-space / data limit
// (ulimit -v, -d), whichever is smaller — leaving room for everything the estimate does not
// count.
#include <optional>
#include <string>
#include <string_view>

namespace trainsim::cli {

double default_memory_budget();

// "4G", "512M", "1.5GiB", "2000000000": bytes; nullopt for anything else (or ≤ 0).
std::optional<double> parse_bytes(std::string_view text);

// The budget --max-memory (or its default) gives, for --help.
std::string memory_budget_help();

}  // namespace trainsim::cli
