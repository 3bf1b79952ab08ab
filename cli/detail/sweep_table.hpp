#pragma once
// The rows `trainsim sweep` writes, one per variant in variant order, as CSV and as JSON
// Lines: the variant's index, the sweep's fingerprint, what became of it, every input field
// of the variant as written, what validation derived, and every output figure. A row is one
// line in both formats (no line breaks inside a cell), so that a table cut short by a kill
// is read back line by line and resumed.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cli/detail/table_cells.hpp"
#include "report/run_report.hpp"
#include "scenarios/loader.hpp"
#include "scenarios/scenario.pb.h"

namespace trainsim::cli::detail {

// What became of a variant.
enum class VariantStatus { OK, CONSTRAINT, INVALID, MEMORY_BOUND, ERROR };
const char* to_string(VariantStatus s);

struct VariantOutcome {
  std::uint64_t index = 0;
  VariantStatus status = VariantStatus::OK;
  std::string reason;  // why it was dropped; empty for OK
  const scenarios::Scenario* written = nullptr;        // the variant as the sweep set it
  const scenarios::LoadedScenario* loaded = nullptr;   // after validation (null when invalid)
  double memory_lower_bound_bytes = 0;                 // 0 when not computed
  const report::RunReport* report = nullptr;           // OK only
};

// Column names, in order.
const std::vector<std::string>& sweep_columns();
// The row of one variant; `fingerprint` identifies the sweep (scenarios::SweepPlan).
Row make_row(const VariantOutcome& outcome, std::uint64_t fingerprint);

// The sweep's header and JSON line (table_cells.hpp, with sweep_columns()); csv_line is
// table_cells.hpp's.
std::string csv_header();
std::string jsonl_line(const Row& row);

// A table already on disk for this sweep: how many rows it holds whole, where they end, and
// what became of them (status and reason counts, for the summary of a resumed sweep).
struct ExistingTable {
  std::uint64_t rows = 0;
  std::vector<std::uint64_t> row_end;  // byte offset after each whole row's line
  std::vector<std::pair<std::string, std::string>> outcomes;  // (status, reason) per row
  std::uint64_t header_end = 0;        // CSV: bytes of the header line; JSONL: 0
};

// Reads an existing CSV (`csv` true) or JSONL table written for `fingerprint`; an error
// message when it is not one (another sweep's table, another file). A last line without its
// line break is a row cut short by a kill: it is not counted.
std::variant<ExistingTable, std::string> scan_table(const std::string& path, bool csv, std::uint64_t fingerprint);

}  // namespace trainsim::cli::detail
