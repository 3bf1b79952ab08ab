#include "scenarios/loader.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <google/protobuf/text_format.h>

#include "scenarios/detail/parse.hpp"
#include "scenarios/detail/validate.hpp"

namespace trainsim::scenarios {

std::string Diagnostic::str() const {
  std::string out = file;
  if (line > 0) {
    out += fmt::format(":{}", line);
    if (column > 0) out += fmt::format(":{}", column);
  }
  out += ": error: ";
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

LoadResult load_file(const std::string& path) {
  // The extension is checked first: reading a file whose format is unknown is wasted work.
  if (!detail::format_for(path)) {
    return std::vector<Diagnostic>{{path, 0, 0, "",
                                    fmt::format("unknown scenario file extension (valid: {})",
                                                detail::valid_extensions())}};
  }
  auto fail = [&](int error) {
    return std::vector<Diagnostic>{{path, 0, 0, "", fmt::format("cannot read file: {}", std::strerror(error))}};
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!in) return fail(errno);
  std::string text;
  char buffer[1 << 16];
  while (true) {
    std::size_t n = std::fread(buffer, 1, sizeof buffer, in.get());
    // fopen succeeds on a directory; the read is what fails (EISDIR).
    if (n < sizeof buffer && std::ferror(in.get())) return fail(errno);
    text.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  return load_text(text, path);
}

LoadResult load_text(const std::string& text, const std::string& file) {
  std::optional<detail::Format> format = detail::format_for(file);
  if (!format) {
    return std::vector<Diagnostic>{{file, 0, 0, "",
                                    fmt::format("unknown scenario file extension (valid: {})",
                                                detail::valid_extensions())}};
  }
  std::vector<Diagnostic> diagnostics;
  Scenario scenario;
  if (*format == detail::Format::JSON) {
    if (!detail::parse_json(text, file, scenario, diagnostics)) return diagnostics;
    return detail::validate(scenario, file, nullptr);
  }
  google::protobuf::TextFormat::ParseInfoTree tree;
  if (!detail::parse_text(text, file, scenario, tree, diagnostics)) return diagnostics;
  return detail::validate(scenario, file, &tree);
}

}  // namespace trainsim::scenarios
