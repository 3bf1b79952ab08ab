// libFuzzer target: the runs-table (CSV) reader and the mapping of its rows to validated
// scenarios. Any
// input must give rows or errors — never a crash or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "scenarios/run_row.hpp"
#include "scenarios/runs_table.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace scenarios = trainsim::scenarios;
  const scenarios::TableResult r = scenarios::read_runs_table(text, "runs.csv");
  if (const auto* table = std::get_if<scenarios::RunsTable>(&r)) {
    for (const auto& row : table->rows) (void)scenarios::load_row(row, table->file);
  }
  return 0;
}
