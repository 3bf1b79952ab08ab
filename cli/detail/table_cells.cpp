#include "cli/detail/table_cells.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace trainsim::cli::detail {
namespace {

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string csv_cell(const Cell& c) {
  if (std::holds_alternative<std::monostate>(c)) return "";
  if (const auto* d = std::get_if<double>(&c)) return std::isfinite(*d) ? fmt::format("{}", *d) : "";
  if (const auto* i = std::get_if<std::int64_t>(&c)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&c)) return *b ? "true" : "false";
  std::string s = one_line(std::get<std::string>(c));
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char ch : s) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + '"';
}

std::string json_cell(const Cell& c) {
  if (std::holds_alternative<std::monostate>(c)) return "null";
  if (const auto* d = std::get_if<double>(&c)) return std::isfinite(*d) ? fmt::format("{}", *d) : "null";
  if (const auto* i = std::get_if<std::int64_t>(&c)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&c)) return *b ? "true" : "false";
  return nlohmann::json(one_line(std::get<std::string>(c))).dump();
}

}  // namespace

std::string csv_header(const std::vector<std::string>& columns) {
  std::string out;
  for (const auto& name : columns) out += (out.empty() ? "" : ",") + name;
  return out + '\n';
}

std::string csv_line(const Row& row) {
  std::string out;
  for (std::size_t i = 0; i < row.cells.size(); ++i) {
    if (i > 0) out += ',';
    out += csv_cell(row.cells[i]);
  }
  return out + '\n';
}

std::string jsonl_line(const Row& row, const std::vector<std::string>& columns) {
  std::string out = "{";
  for (std::size_t i = 0; i < row.cells.size(); ++i) {
    if (i > 0) out += ',';
    out += '"' + columns[i] + "\":" + json_cell(row.cells[i]);
  }
  return out + "}\n";
}

}  // namespace trainsim::cli::detail
