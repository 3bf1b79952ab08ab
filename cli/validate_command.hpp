#pragma once
// `trainsim validate FILE.csv`: simulates every row of a runs table (scenarios/runs_table.hpp),
// each row mapped to a scenario and validated as one (scenarios/run_row.hpp), and compares the predicted iteration time with the measured one. Rows run independently: a
// row trainsim cannot build yet is listed as SKIPPED with the reason, never dropped.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/run_row.hpp"
#include "scenarios/runs_table.hpp"
#include "strategies/lower.hpp"
#include "strategies/spec.hpp"

namespace trainsim::cli {

struct ValidateOptions {
  std::string table_path;
  std::string json_path;  // empty: no JSON file
  strategies::Fidelity fidelity = strategies::Fidelity::FAST;
  double max_memory_bytes = 0;  // --max-memory, per row; 0: default_memory_budget()
  bool unstated = false;         // --unstated: each row also with other values its empty cells could hold
};

// A value an empty cell of a row could have held instead of its documented default, and
// what the row predicts with it. The table's MAPE never uses it: it shows how much of a
// row's error an unstated setting can account for, not which value the run used.
struct UnstatedAlternative {
  std::string column;  // "micro_batch", "vpp", "recompute" or "sequence_parallel"
  std::string value;   // as the cell would hold it: "2", "selective"
  bool ran = false;
  double predicted_s = 0, error_pct = 0;  // when ran
  bool out_of_memory = false;
  std::string skip_reason;  // when not ran: the rule the value breaks
};

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
  std::string report_json;  // the row's whole run report (breakdown, memory classes), when ran
  std::vector<scenarios::DefaultUsed> defaults;
  std::string skip_reason;  // when not ran
  std::vector<UnstatedAlternative> unstated;  // with --unstated, when ran
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
RowOutcome validate_row(const scenarios::RunRow& row, const std::string& file, strategies::Fidelity fidelity,
                        double max_memory_bytes = 0);
// The row again with each other value its empty micro_batch, vpp, recompute and
// sequence_parallel cells could hold, one cell at a time: micro-batches of 2, 4, 8 …
// sequences that divide a replica's share of the global batch, up to the first that runs
// out of memory; with a pipeline and an even split, every virtual-stage count above 1 that
// divides each stage's layers; selective and full recompute; sequence parallelism where the
// default left it off and tp > 1. Values the scenario rules refuse come back skipped.
std::vector<UnstatedAlternative> unstated_alternatives(const scenarios::RunRow& row, const std::string& file,
                                                       strategies::Fidelity fidelity, double max_memory_bytes = 0);
ValidationResult validate_table(const scenarios::RunsTable& table, strategies::Fidelity fidelity,
                                double max_memory_bytes = 0, bool unstated = false);

inline constexpr int VALIDATION_SCHEMA_VERSION = 2;  // 2: each row run carries its run report
std::string validation_text(const ValidationResult& result);
std::string validation_json(const ValidationResult& result);


// The whole command: 0 when the table was read (rows may have been skipped), 1 when it
// could not be read or the JSON could not be written.
int validate_command(const ValidateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
