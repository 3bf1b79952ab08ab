#pragma once
// Reading a file that a user names as input — a scenario, the Hugging Face config.json it
// points at, a runs table — with a size cap. A path can name anything: a device such as
// /dev/zero never ends and a huge file fills memory, so only regular files are read and
// the read stops at `max_bytes`. The error is a short reason for "cannot read file: …".
#include <cstddef>
#include <string>

namespace trainsim::scenarios {

// Caps for the inputs trainsim reads (each far above any real one).
inline constexpr std::size_t MAX_SCENARIO_BYTES = std::size_t{16} << 20;
inline constexpr std::size_t MAX_HF_CONFIG_BYTES = std::size_t{16} << 20;
// A GPU profile file (cluster.profile): tens of kilobytes even with many collective fits.
inline constexpr std::size_t MAX_PROFILE_BYTES = std::size_t{16} << 20;
inline constexpr std::size_t MAX_RUNS_TABLE_BYTES = std::size_t{64} << 20;

struct InputFile {
  std::string text;   // the bytes, when error is empty
  std::string error;  // why the file was not read: "No such file or directory", "not a regular file …"
  bool ok() const { return error.empty(); }
};

[[nodiscard]] InputFile read_input_file(const std::string& path, std::size_t max_bytes);

}  // namespace trainsim::scenarios
