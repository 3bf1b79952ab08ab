#pragma once
// The measurement tables the harness writes and the fits read (copies.csv, memory.csv,
// attention.csv): blank lines and '#' comments skipped, a fixed header first, then rows of
// exactly the header's number of comma-separated fields.
#include <functional>
#include <string>
#include <vector>

namespace trainsim::calibration {

// Calls row(fields, at) for each data row, `at` being "origin:line: error: " for the
// messages the row's checks return. Returns the first error — a wrong header, a row with
// the wrong field count, or what `row` returned — or "" when every row was read.
// `header_seen` (when given) tells whether the text had a header line at all.
std::string read_csv_rows(const std::string& text, const std::string& origin, const std::string& header,
                          const std::function<std::string(const std::vector<std::string>& fields,
                                                          const std::string& at)>& row,
                          bool* header_seen = nullptr);

}  // namespace trainsim::calibration
