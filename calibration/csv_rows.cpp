#include "calibration/csv_rows.hpp"

#include <algorithm>
#include <sstream>

namespace trainsim::calibration {

std::string read_csv_rows(const std::string& text, const std::string& origin, const std::string& header,
                          const std::function<std::string(const std::vector<std::string>&, const std::string&)>& row,
                          bool* header_seen) {
  const auto expected = static_cast<std::size_t>(std::count(header.begin(), header.end(), ',')) + 1;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  bool seen = false;
  std::vector<std::string> fields;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::string at = origin + ":" + std::to_string(line_no) + ": error: ";
    if (!seen) {
      seen = true;
      if (header_seen != nullptr) *header_seen = true;
      if (line != header) return at + "expected the header \"" + header + "\"";
      continue;
    }
    fields.clear();
    for (std::size_t start = 0;;) {
      const std::size_t comma = line.find(',', start);
      fields.push_back(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (fields.size() != expected)
      return at + "expected " + std::to_string(expected) + " fields (" + header + "), found " +
             std::to_string(fields.size());
    if (std::string error = row(fields, at); !error.empty()) return error;
  }
  if (header_seen != nullptr) *header_seen = seen;
  return "";
}

}  // namespace trainsim::calibration
