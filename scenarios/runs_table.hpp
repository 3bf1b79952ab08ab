#pragma once
// The runs table (../shared/validation/README.md): one measured training run per CSV row.
// Reading checks the file alone — CSV syntax (RFC 4180), the header, every cell's type and
// token — and turns each row into a typed RunRow; whether a row describes a run trainsim
// can build is decided later, row by row, by mapping it to a Scenario and validating that
// with the scenario rules (run_row.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hardware/cost_model.hpp"
#include "models/model.hpp"
#include "strategies/spec.hpp"

namespace trainsim::scenarios {

// One problem with the table: "file:line: error: column "x": message".
struct TableError {
  std::string file;
  int line = 0;        // 1-based line where the record starts; 0 when the file could not be read
  std::string column;  // the column's header name; empty for problems of a whole record
  std::string message;
  bool warning = false;  // reading goes on; the line says "warning" instead of "error"
  std::string str() const;
};

// A CSV record as written: its fields, unquoted and with doubled quotes undone.
struct CsvRecord {
  int line = 0;  // where the record starts (a quoted field may span lines)
  std::vector<std::string> fields;
};

// Splits `text` into records (RFC 4180: fields separated by commas, records by LF or
// CRLF, a field in double quotes may hold commas, line breaks and "" for one quote).
// Blank lines are skipped. Syntax errors are appended to `errors`; the record they occur
// in is dropped and reading resumes at the next line.
std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& file, std::vector<TableError>& errors);

struct Overlap {
  bool grad_reduce = false;   // data-parallel gradient reduction under backward
  bool param_gather = false;  // distributed-optimizer parameter all-gather under forward
  bool tp_comm = false;       // tensor-parallel collectives overlapped with GEMMs
  bool operator==(const Overlap&) const = default;
};

// One row, typed. Optional cells are nullopt when empty: the source did not state them,
// and the mapping to a run fills the documented default (and says so).
struct RunRow {
  int line = 0;
  std::string name;
  std::string source;
  models::Family family = models::Family::GPT;
  std::int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, seq = 0;
  std::string gpu;  // one of gpu_tokens(); not every one has a profile yet
  std::int64_t gpus = 0, gpus_per_node = 0;
  double nic_gbps = 0;
  std::int64_t tp = 0, pp = 0;
  std::optional<std::int64_t> dp, cp, ep, vpp;
  std::optional<std::int64_t> first_stage_layers, last_stage_layers;  // uneven pipeline split
  std::optional<std::int64_t> micro_batch;
  std::int64_t global_batch = 0;
  std::optional<strategies::Recompute> recompute;
  std::optional<bool> sequence_parallel;
  std::optional<std::int64_t> zero_stage;
  std::optional<hardware::Dtype> precision;
  std::optional<bool> flash_attention;  // `attention`: flash (true) or unfused (false)
  std::optional<Overlap> overlap;
  std::string metric;  // "iteration_time_s"
  double value = 0;    // the measurement, in the metric's unit
  std::string notes;
};

struct RunsTable {
  std::string file;
  std::vector<RunRow> rows;  // in file order
  // Things worth telling that do not stop reading: columns no reader knows (a misspelt
  // column would otherwise pass unnoticed, its cells ignored).
  std::vector<TableError> warnings;
};

using TableResult = std::variant<RunsTable, std::vector<TableError>>;

// Reads a runs table from `text` as if read from `file` (for messages). Every error is
// reported, in file order; a table with any error yields no rows.
[[nodiscard]] TableResult read_runs_table(std::string_view text, const std::string& file);
// Reads the file at `path`.
[[nodiscard]] TableResult read_runs_table_file(const std::string& path);

// The columns the header must name. `source` and `notes` are provenance for people and
// may be left out; any other column is ignored with a warning that names it.
const std::vector<std::string>& required_columns();
// Columns a table may leave out (older tables): absent reads as empty in every row.
const std::vector<std::string>& optional_columns();
// Every column the reader knows: the required ones, the optional ones, then `source` and `notes`.
const std::vector<std::string>& known_columns();
// The `gpu` tokens of the format, with or without a shipped profile.
const std::vector<std::string>& gpu_tokens();

}  // namespace trainsim::scenarios
