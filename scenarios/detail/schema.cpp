#include "scenarios/detail/schema.hpp"

#include <algorithm>
#include <deque>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "scenarios/scenario.pb.h"

namespace trainsim::scenarios::detail {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

struct FieldAt {
  std::string path;
  const FieldDescriptor* field;
};

// Every field of the schema with its dotted path, breadth-first from Scenario. A message
// type is expanded once, so a recursive schema would still terminate.
const std::vector<FieldAt>& all_fields() {
  static const std::vector<FieldAt> fields = [] {
    std::vector<FieldAt> out;
    std::set<const Descriptor*> expanded;
    std::deque<std::pair<std::string, const Descriptor*>> queue{{"", Scenario::descriptor()}};
    while (!queue.empty()) {
      auto [prefix, type] = queue.front();
      queue.pop_front();
      if (!expanded.insert(type).second) continue;
      for (int i = 0; i < type->field_count(); ++i) {
        const FieldDescriptor* f = type->field(i);
        std::string path = prefix.empty() ? f->name() : prefix + "." + f->name();
        out.push_back({path, f});
        if (f->type() == FieldDescriptor::TYPE_MESSAGE) queue.emplace_back(path, f->message_type());
      }
    }
    return out;
  }();
  return fields;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

namespace {

// Appends the first `max_bytes` of `s` with bytes outside printable ASCII as \xNN (and,
// inside quotes, `"` and `\` backslash-escaped), then "…" if anything was cut.
void append_escaped(std::string& out, std::string_view s, std::size_t max_bytes, bool quoted) {
  for (unsigned char c : s.substr(0, max_bytes)) {
    if (quoted && (c == '"' || c == '\\')) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > max_bytes) out += "…";
}

}  // namespace

std::string printable(std::string_view s, std::size_t max_bytes) {
  std::string out;
  append_escaped(out, s, max_bytes, false);
  return out;
}

std::string quote(std::string_view s) {
  // A message quotes what was written so that it can be found; the first bytes do that.
  constexpr std::size_t MAX_QUOTED = 80;
  std::string out = "\"";
  append_escaped(out, s, MAX_QUOTED, true);
  out += '"';
  return out;
}

std::string join(const std::vector<std::string>& items) { return fmt::format("{}", fmt::join(items, ", ")); }

std::string path_of(const Descriptor* type) {
  if (type == Scenario::descriptor()) return "";
  for (const FieldAt& f : all_fields()) {
    if (f.field->message_type() == type) return f.path;
  }
  return "";
}

const FieldDescriptor* field_at(std::string_view path) {
  for (const FieldAt& f : all_fields()) {
    if (f.path == path) return f.field;
  }
  return nullptr;
}

std::vector<std::string> paths_named(std::string_view name) {
  std::vector<std::string> out;
  for (const FieldAt& f : all_fields()) {
    if (f.field->name() == name) out.push_back(f.path);
  }
  return out;
}

std::vector<std::string> field_names(const Descriptor* type) {
  std::vector<std::string> out;
  for (int i = 0; i < type->field_count(); ++i) out.push_back(type->field(i)->name());
  return out;
}

std::vector<std::string> enum_value_names(const google::protobuf::EnumDescriptor* type) {
  std::vector<std::string> out;
  for (int i = 0; i < type->value_count(); ++i) {
    const auto* v = type->value(i);
    if (v->number() == 0 && v->name().ends_with("_UNSPECIFIED")) continue;
    out.push_back(v->name());
  }
  return out;
}

std::string closest(std::string_view name, const std::vector<std::string>& candidates) {
  // Names are short; a long input is no misspelling, and edit distance is quadratic.
  if (name.size() > 64) return "";
  // A name that starts a candidate ("a100" for "a100-80gb") is a shorthand, whatever the
  // edit distance says; the shortest such candidate is the likeliest.
  std::string prefixed;
  if (name.size() >= 2) {
    for (const std::string& c : candidates) {
      if (c.starts_with(name) && c != name && (prefixed.empty() || c.size() < prefixed.size())) prefixed = c;
    }
  }
  if (!prefixed.empty()) return prefixed;
  // A third of the name's length (at least 2) catches typos and a dropped or added
  // plural "s" without offering unrelated names.
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
  std::string best;
  for (const std::string& c : candidates) {
    std::size_t d = edit_distance(name, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string unknown_field_message(const Descriptor* type, std::string_view name, bool json) {
  std::vector<std::string> names = field_names(type);
  std::vector<std::string> candidates = names;
  if (json) {
    for (int i = 0; i < type->field_count(); ++i) candidates.push_back(type->field(i)->json_name());
  }
  std::string where = path_of(type);
  std::string message =
      fmt::format("unknown field {} in {}", quote(name), where.empty() ? "the scenario" : where);
  if (std::string guess = closest(name, candidates); !guess.empty()) {
    message += fmt::format("; did you mean {}?", quote(guess));
  }
  message += fmt::format(" (valid: {})", join(names));
  return message;
}

std::string unknown_enum_message(const google::protobuf::EnumDescriptor* type, std::string_view value,
                                 bool is_number) {
  std::vector<std::string> names = enum_value_names(type);
  std::string message = fmt::format("unknown value {}", is_number ? printable(value, 80) : quote(value));
  if (std::string guess = is_number ? "" : closest(value, names); !guess.empty()) {
    message += fmt::format("; did you mean {}?", guess);
  }
  message += fmt::format(" (valid: {})", join(names));
  return message;
}

}  // namespace trainsim::scenarios::detail
