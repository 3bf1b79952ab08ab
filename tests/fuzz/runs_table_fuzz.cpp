// libFuzzer target: the runs-table (CSV) reader and the mapping of its rows to runs. Any
// input must give rows or errors — never a crash or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "cli/runs_table.hpp"
#include "cli/validate_command.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const trainsim::cli::TableResult r = trainsim::cli::read_runs_table(text, "runs.csv");
  if (const auto* table = std::get_if<trainsim::cli::RunsTable>(&r)) {
    for (const auto& row : table->rows) (void)trainsim::cli::map_row(row);
  }
  return 0;
}
