#pragma once
// Reader of nccl-tests output (NVIDIA/nccl-tests: all_reduce_perf, all_gather_perf, …) so
// that measurements from a user's large cluster can be fitted. Three formats, all of one run
// reading to the same rows:
//   * the text table of current nccl-tests (columns size count type redop root, then
//     time algbw busbw #wrong for out-of-place and again for in-place);
//   * the older text table (no root column, an `error` column instead of `#wrong`, and in the
//     oldest versions no redop column either); the table header names the columns, so the
//     layout is read from it;
//   * the JSON report of `-J file.json`.
// Format reference: ../shared/reference/nccl-and-hardware.md §2.2-2.3 and nccl-tests'
// src/common.cu / src/util.cu.
//
// Bad input: a log that cannot be trusted as a whole (cut inside the table, two table
// layouts in one file, a row with #wrong > 0, a footer reporting out-of-bounds values) is an
// error naming file and line; a single unreadable row (wrong field count, a non-numeric
// field, algbw that disagrees with size/time) is skipped with a warning, and the warnings
// are counted.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace trainsim::calibration {

// One half of a row: the out-of-place or the in-place measurement.
struct NcclTestsTiming {
  double time_us = 0;     // host wall time per operation
  double algbw_gbps = 0;  // size / time, decimal GB/s
  double busbw_gbps = 0;
  std::optional<double> wrong;  // #wrong (current) or error (older); nullopt for "N/A"
};

struct NcclTestsRow {
  std::uint64_t size_bytes = 0;  // the full buffer (nccl-tests' "size" column)
  std::uint64_t count = 0;       // elements, as nccl-tests passes them to NCCL
  std::string type;              // "float", "bfloat16", …
  std::string redop;             // "sum", "none"; empty in the oldest format
  std::optional<int> root;       // -1 for rootless collectives; absent in the older formats
  NcclTestsTiming out_of_place;
  std::optional<NcclTestsTiming> in_place;  // absent in JSON when nccl-tests wrote null
  int line = 0;                             // where the row is (JSON: 0)
};

enum class NcclTestsFormat { TEXT, TEXT_OLDER, JSON };
const char* format_name(NcclTestsFormat f);

struct NcclTestsLog {
  std::string origin;        // file name, for messages
  NcclTestsFormat format = NcclTestsFormat::TEXT;
  std::string collective;    // "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv"
  int ranks = 0;             // GPUs in the run; 0 when the log does not list its devices
  int nodes = 0;             // distinct host names among the devices; 0 when unknown
  std::string gpu_name;      // from the device lines, e.g. "NVIDIA H100 80GB HBM3"
  std::string algorithm;     // NCCL_ALGO of the run when the log states it, else "auto"
  std::string protocol;      // NCCL_PROTO likewise, else "auto"
  std::vector<NcclTestsRow> rows;
  std::vector<std::string> warnings;  // "file:line: warning: …", one per skipped row
  int skipped_rows = 0;
};

struct LogError {
  std::string file;
  int line = 0;  // 0: the file as a whole (or a JSON field path in the message)
  std::string message;
};
std::string to_string(const LogError& e);  // "file:line: error: message"

using NcclTestsResult = std::variant<NcclTestsLog, LogError>;

// Reads one nccl-tests run (one table). The format is recognised from the text: a JSON
// object, or a text log whose table header says which columns follow. `origin` names the
// input in messages. `collective` names the collective for logs that do not say (older
// nccl-tests print no "Collective test starting" line); when the log says, they must agree.
[[nodiscard]] NcclTestsResult read_nccl_tests(std::string_view text, const std::string& origin,
                                              std::string_view collective = {});

// The collective measured by an nccl-tests binary name: "all_reduce_perf" and
// "./build/all_reduce_perf_mpi" → "all_reduce"; empty when it is not one.
std::string collective_of_binary(std::string_view name);

}  // namespace trainsim::calibration
