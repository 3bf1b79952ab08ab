#pragma once
// Rows of a table as the commands write them, one line each in both formats (no line break
// inside a cell): CSV with RFC 4180 quoting, and JSON Lines with the column names as keys.
// A cell is empty (CSV) or null (JSON) when it has no value, and a number prints as the
// shortest text that reads back to the same double.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace trainsim::cli::detail {

using Cell = std::variant<std::monostate, double, std::int64_t, bool, std::string>;

struct Row {
  std::vector<Cell> cells;  // in column order
};

std::string csv_header(const std::vector<std::string>& columns);  // ends in '\n'
std::string csv_line(const Row& row);                               // ends in '\n'
std::string jsonl_line(const Row& row, const std::vector<std::string>& columns);  // ends in '\n'

}  // namespace trainsim::cli::detail
