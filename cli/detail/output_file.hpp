#pragma once
// Writing the files a command produces (--json, --trace) without destroying anything: an
// output is written to PATH.tmp beside PATH and renamed over PATH only once it is complete,
// so a run that fails leaves PATH as it was; and an output path that names one of the
// command's inputs (or another output) is refused before anything is opened.
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainsim::cli::detail {

// One output and the option that named it, for the messages.
struct OutputPath {
  std::string option;  // "--json"
  std::string path;    // empty: not asked for
};

// "PATH: error: --trace names the input file …" for the first output that is the same file
// as an input (std::filesystem::equivalent: links and other spellings count) or as another
// output; nullopt when every output is a file of its own.
std::optional<std::string> refuse_overwriting_inputs(const std::vector<OutputPath>& outputs,
                                                     const std::vector<std::string>& inputs);

class OutputFile {
 public:
  // Opens PATH.tmp for writing (PATH itself when it is a device or a pipe, such as
  // /dev/null); `error()` says why when that failed.
  explicit OutputFile(std::string path);
  ~OutputFile();  // removes PATH.tmp unless commit() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool is_open() const { return out_.is_open() && error_.empty(); }
  std::ostream& stream() { return out_; }
  // Flushes, closes and renames PATH.tmp to PATH; false (and error()) when any step failed.
  bool commit();
  // "PATH: error: cannot open for writing (…)", "PATH: error: write failed".
  const std::string& error() const { return error_; }

 private:
  std::string path_, temporary_;
  std::ofstream out_;
  std::string error_;
  bool committed_ = false;
};

}  // namespace trainsim::cli::detail
