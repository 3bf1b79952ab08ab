#pragma once
// `trainsim validate FILE.csv`: simulates every row of a runs table (runs_table.hpp) and
// compares the predicted iteration time with the measured one. Rows run independently: a
// row trainsim cannot build yet is listed as SKIPPED with the reason, never dropped.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "cli/runs_table.hpp"
#include "hardware/cluster.hpp"
#include "hardware/profile.pb.h"
#include "strategies/lower.hpp"
#include "strategies/spec.hpp"

namespace trainsim::cli {

struct ValidateOptions {
  std::string table_path;
  std::string json_path;  // empty: no JSON file
  strategies::Fidelity fidelity = strategies::Fidelity::FAST;
  double max_memory_bytes = 0;  // --max-memory, per row; 0: default_memory_budget()
};

// A value the row left empty and the validator filled in.
struct DefaultUsed {
  std::string column;
  std::string value;
  std::string why;  // empty when the value is the plain default
  std::string str() const;  // "zero_stage=1 (why)"
};

// A row turned into what the simulator takes, or the reasons it cannot be.
struct MappedRow {
  strategies::TrainingSpec training;
  hardware::ClusterSpec cluster;
  std::optional<hardware::GpuProfile> gpu;  // nullopt: no profile for the row's GPU yet
  std::vector<DefaultUsed> defaults;        // in column order
  std::vector<std::string> skip_reasons;    // empty: the row can be simulated
};

MappedRow map_row(const RunRow& row);

struct RowOutcome {
  std::string name;
  int line = 0;
  double measured_s = 0;
  bool ran = false;
  double predicted_s = 0;  // when ran
  double error_pct = 0;    // (predicted − measured) / measured × 100, when ran
  bool out_of_memory = false;
  double peak_gib = 0, capacity_gib = 0;
  std::string pipeline;  // the pass pipeline that ran
  std::vector<DefaultUsed> defaults;
  std::string skip_reason;  // when not ran
};

struct ValidationResult {
  std::string file;
  strategies::Fidelity fidelity = strategies::Fidelity::FAST;
  std::vector<RowOutcome> rows;
  std::int64_t run = 0, skipped = 0;
  std::optional<double> mape_pct;   // mean |error_pct| over the rows run; nullopt when none ran
  std::optional<std::size_t> worst;  // index into rows of the largest |error_pct|
};

// Maps and simulates one row. Never throws for a row's content: a row that cannot be
// built or simulated comes back skipped, with the reason.
// A row whose plan would need more than `max_memory_bytes` (0: the default budget) is
// skipped with the estimate and what to change.
RowOutcome validate_row(const RunRow& row, strategies::Fidelity fidelity, double max_memory_bytes = 0);
ValidationResult validate_table(const RunsTable& table, strategies::Fidelity fidelity, double max_memory_bytes = 0);

inline constexpr int VALIDATION_SCHEMA_VERSION = 1;
std::string validation_text(const ValidationResult& result);
std::string validation_json(const ValidationResult& result);

// The defaults an empty cell takes, as a table for `trainsim validate --help`.
std::string defaults_help();

// The whole command: 0 when the table was read (rows may have been skipped), 1 when it
// could not be read or the JSON could not be written.
int validate_command(const ValidateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
