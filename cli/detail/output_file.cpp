#include "cli/detail/output_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace trainsim::cli::detail {

namespace fs = std::filesystem;

namespace {

// Whether two paths name one existing file; a path that does not exist yet names none.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  const bool same = fs::equivalent(a, b, ec);
  return !ec && same;
}

}  // namespace

std::optional<std::string> refuse_overwriting_inputs(const std::vector<OutputPath>& outputs,
                                                     const std::vector<std::string>& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const OutputPath& o = outputs[i];
    if (o.path.empty()) continue;
    for (const std::string& input : inputs) {
      if (same_file(o.path, input) || o.path == input) {
        return fmt::format("{}: error: {} names the input file {}: writing it would destroy that input (choose "
                           "another output path)",
                           o.path, o.option, input);
      }
    }
    for (std::size_t k = 0; k < i; ++k) {
      if (!outputs[k].path.empty() && (outputs[k].path == o.path || same_file(outputs[k].path, o.path))) {
        return fmt::format("{}: error: {} and {} name the same file (give each output its own path)", o.path,
                           outputs[k].option, o.option);
      }
    }
  }
  return std::nullopt;
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)), temporary_(path_ + ".tmp") {
  // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written in place: renaming a
  // file over it would replace the device node itself.
  std::error_code ec;
  const fs::file_status status = fs::status(path_, ec);
  if (!ec && fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status)) temporary_ = path_;
  out_.open(temporary_, std::ios::binary | std::ios::trunc);
  if (!out_) error_ = fmt::format("{}: error: cannot open for writing ({}: {})", path_, temporary_, std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (committed_ || temporary_ == path_) return;
  if (out_.is_open()) out_.close();
  std::error_code ignored;
  fs::remove(temporary_, ignored);
}

bool OutputFile::commit() {
  if (!error_.empty()) return false;
  out_.flush();
  if (!out_) {
    error_ = fmt::format("{}: error: write failed", path_);
    return false;
  }
  out_.close();
  if (out_.fail()) {
    error_ = fmt::format("{}: error: write failed", path_);
    return false;
  }
  committed_ = temporary_ == path_;
  if (committed_) return true;
  std::error_code ec;
  fs::rename(temporary_, path_, ec);
  if (ec) {
    error_ = fmt::format("{}: error: cannot replace it with {}: {}", path_, temporary_, ec.message());
    return false;
  }
  committed_ = true;
  return true;
}

}  // namespace trainsim::cli::detail
