#pragma once
// A row of a runs table is a scenario: each cell becomes the scenario field it stands for,
// an empty cell takes the table format's documented default (and says so), and the result
// is validated by the same rules as a scenario file — one set of rules for both inputs.
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/loader.hpp"
#include "scenarios/runs_table.hpp"
#include "scenarios/scenario.pb.h"

namespace trainsim::scenarios {

// A value the row left empty and the mapping filled in.
struct DefaultUsed {
  std::string column;
  std::string value;
  std::string why;  // empty when the value is the plain default
  std::string str() const;  // "zero_stage=1 (why)"
};

struct RowScenario {
  Scenario scenario;                  // the row as a scenario file would write it
  std::vector<DefaultUsed> defaults;  // in column order
  // What the row gets wrong that no scenario field can express (gpus not a multiple of
  // gpus_per_node: a scenario gives nodes, not GPUs).
  std::vector<std::string> problems;
};

RowScenario row_scenario(const RunRow& row);

struct LoadedRow {
  std::vector<DefaultUsed> defaults;
  // The scenario, or why the row cannot be built: each diagnostic is placed at the row's
  // line and names the table column (and the scenario field) it is about.
  LoadResult scenario;
};

// Maps the row and validates the scenario. `file` is the table's path, for messages.
LoadedRow load_row(const RunRow& row, const std::string& file);

// The table column a scenario field comes from ("parallel.tensor" → "tp"); empty for a
// field no column sets.
std::string_view column_of_field(std::string_view field);

// The defaults an empty cell takes, as a table for `trainsim validate --help`.
std::string row_defaults_help();

}  // namespace trainsim::scenarios
