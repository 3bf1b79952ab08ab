#pragma once
// Turning scenario text into a Scenario message: protobuf text format (with field
// locations) or the JSON mapping. Parse problems become Diagnostics that name the field
// and what would be valid; semantic checks come after, in validate.hpp.
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "scenarios/loader.hpp"
#include "scenarios/scenario.pb.h"

namespace trainsim::scenarios::detail {

enum class Format { TEXT, JSON };

// Drops what protobuf's tokenizer or parser would report: for callers that report the
// problem themselves, with the field and what is valid (protobuf's default logs to stderr).
class SilentErrorCollector final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

// The format a file name's extension selects; nullopt for any other extension.
std::optional<Format> format_for(std::string_view file);
// The extensions format_for accepts, for the error that lists them.
std::string valid_extensions();

// Parses protobuf text format into `out`, recording where each field was written into
// `tree`. Appends a Diagnostic per problem (all unknown fields, else the first syntax
// error); returns true when `out` holds the whole file and no Diagnostic was added.
bool parse_text(const std::string& text, const std::string& file, Scenario& out,
                google::protobuf::TextFormat::ParseInfoTree& tree, std::vector<Diagnostic>& diagnostics);
// Parses the JSON mapping into `out`; unknown fields are errors. Same contract as
// parse_text. Debian's protobuf reports no positions for JSON, so field errors carry the
// field path only; syntax errors are placed from the context snippet protobuf quotes.
bool parse_json(const std::string& text, const std::string& file, Scenario& out,
                std::vector<Diagnostic>& diagnostics);

// Where a field was written: 1-based line and column of the field at a dotted path, or
// of its nearest enclosing message that was written; {0, 0} when none was (or for JSON,
// which has no tree).
class Locator {
 public:
  explicit Locator(const google::protobuf::TextFormat::ParseInfoTree* tree) : tree_(tree) {}
  std::pair<int, int> locate(std::string_view path) const;

 private:
  const google::protobuf::TextFormat::ParseInfoTree* tree_;
};

}  // namespace trainsim::scenarios::detail
