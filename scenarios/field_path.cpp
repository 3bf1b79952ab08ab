#include "scenarios/field_path.hpp"

#include <google/protobuf/text_format.h>

#include <fmt/format.h>

#include "scenarios/detail/parse.hpp"

namespace trainsim::scenarios {
namespace {

namespace pb = google::protobuf;

std::string names_of(const pb::Descriptor* type) {
  std::string out;
  for (int i = 0; i < type->field_count(); ++i) {
    if (type->field(i)->name() == "sweep") continue;
    if (!out.empty()) out += ", ";
    out += type->field(i)->name();
  }
  return out;
}

// The message holding the leaf: nullptr when reading and a message on the way is unset
// (the leaf then reads as its default).
const pb::Message* holder(const pb::Message& root, const FieldPath& path) {
  const pb::Message* m = &root;
  for (std::size_t i = 0; i + 1 < path.fields.size(); ++i) {
    const pb::Reflection* r = m->GetReflection();
    if (!r->HasField(*m, path.fields[i])) return nullptr;
    m = &r->GetMessage(*m, path.fields[i]);
  }
  return m;
}

void collect(const pb::Descriptor* type, FieldPath prefix, std::vector<FieldPath>& out) {
  for (int i = 0; i < type->field_count(); ++i) {
    const pb::FieldDescriptor* f = type->field(i);
    if (f->name() == "sweep" || f->is_repeated()) continue;
    FieldPath p = prefix;
    p.text += (p.text.empty() ? "" : ".") + f->name();
    p.fields.push_back(f);
    if (f->message_type() != nullptr) {
      collect(f->message_type(), p, out);
    } else {
      out.push_back(std::move(p));
    }
  }
}

}  // namespace

std::variant<FieldPath, std::string> resolve_field(std::string_view path) {
  FieldPath out;
  out.text = std::string(path);
  const pb::Descriptor* type = Scenario::descriptor();
  std::string_view rest = path;
  std::string walked;
  while (true) {
    const std::size_t dot = rest.find('.');
    const std::string name(rest.substr(0, dot));
    const pb::FieldDescriptor* f = type->FindFieldByName(name);
    if (f == nullptr || (type == Scenario::descriptor() && name == "sweep")) {
      return fmt::format("no field \"{}\" in {} (valid: {})", name, walked.empty() ? "the scenario" : walked,
                         names_of(type));
    }
    walked += (walked.empty() ? "" : ".") + name;
    out.fields.push_back(f);
    if (f->is_repeated()) return fmt::format("{} is a repeated field; an axis sets one value", walked);
    if (dot == std::string_view::npos) {
      if (f->message_type() != nullptr)
        return fmt::format("{} is a message; name one of its fields (valid: {})", walked,
                           names_of(f->message_type()));
      return out;
    }
    if (f->message_type() == nullptr) return fmt::format("{} is not a message: nothing lies below it", walked);
    type = f->message_type();
    rest = rest.substr(dot + 1);
  }
}

std::string set_field(Scenario& scenario, const FieldPath& path, const std::string& value) {
  pb::Message* m = &scenario;
  for (std::size_t i = 0; i + 1 < path.fields.size(); ++i) m = m->GetReflection()->MutableMessage(m, path.fields[i]);
  const pb::FieldDescriptor* leaf = path.leaf();
  if (leaf->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
    m->GetReflection()->SetString(m, leaf, value);
    return "";
  }
  // A value that does not parse is reported below, naming the field and what is valid;
  // protobuf's own log line about it would only repeat that on stderr.
  detail::SilentErrorCollector silent;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&silent);
  if (!parser.ParseFieldValueFromString(value, leaf, m)) {
    std::string valid = leaf->cpp_type_name();
    if (leaf->enum_type() != nullptr) {
      valid.clear();
      for (int i = 0; i < leaf->enum_type()->value_count(); ++i)
        valid += (i ? ", " : "") + leaf->enum_type()->value(i)->name();
    }
    return fmt::format("\"{}\" is not a value of {} (valid: {})", value, path.text, valid);
  }
  return "";
}

FieldValue get_field(const Scenario& scenario, const FieldPath& path) {
  const pb::FieldDescriptor* f = path.leaf();
  const pb::Message* m = holder(scenario, path);
  if (m == nullptr) {
    switch (f->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_STRING: return std::string();
      case pb::FieldDescriptor::CPPTYPE_ENUM: return std::string(f->default_value_enum()->name());
      default: return 0.0;
    }
  }
  const pb::Reflection* r = m->GetReflection();
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: return static_cast<double>(r->GetInt32(*m, f));
    case pb::FieldDescriptor::CPPTYPE_INT64: return static_cast<double>(r->GetInt64(*m, f));
    case pb::FieldDescriptor::CPPTYPE_UINT32: return static_cast<double>(r->GetUInt32(*m, f));
    case pb::FieldDescriptor::CPPTYPE_UINT64: return static_cast<double>(r->GetUInt64(*m, f));
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: return r->GetDouble(*m, f);
    case pb::FieldDescriptor::CPPTYPE_FLOAT: return static_cast<double>(r->GetFloat(*m, f));
    case pb::FieldDescriptor::CPPTYPE_BOOL: return r->GetBool(*m, f) ? 1.0 : 0.0;
    case pb::FieldDescriptor::CPPTYPE_ENUM: return std::string(r->GetEnum(*m, f)->name());
    case pb::FieldDescriptor::CPPTYPE_STRING: return r->GetString(*m, f);
    default: return 0.0;
  }
}

const std::vector<FieldPath>& scalar_fields() {
  static const std::vector<FieldPath> all = [] {
    std::vector<FieldPath> out;
    collect(Scenario::descriptor(), FieldPath{}, out);
    return out;
  }();
  return all;
}

std::string field_text(const Scenario& scenario, const FieldPath& path) {
  const pb::FieldDescriptor* f = path.leaf();
  const pb::Message* m = holder(scenario, path);
  if (m == nullptr) return "";
  const pb::Reflection* r = m->GetReflection();
  if (f->has_presence() && !r->HasField(*m, f)) return "";
  if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) return r->GetString(*m, f);
  std::string out;
  pb::TextFormat::PrintFieldValueToString(*m, f, -1, &out);
  return out;
}

}  // namespace trainsim::scenarios
