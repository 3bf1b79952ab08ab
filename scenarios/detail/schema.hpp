#pragma once
// Questions about the scenario schema that error messages need answered: which fields a
// message has, which values an enum takes, where a message type sits in a Scenario, and
// which name a misspelling was meant to be. Answers come from the descriptors, so they
// follow scenario.proto without a second list to keep in step.
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>

namespace trainsim::scenarios::detail {

// `s` in double quotes, bytes outside printable ASCII escaped (\xNN) and anything past 80
// bytes cut ("…"), so that a message stays one clean line whatever the input held.
std::string quote(std::string_view s);
// The same without quotes and with a chosen cut, for field paths and protobuf's own
// messages, which may carry a written token.
std::string printable(std::string_view s, std::size_t max_bytes = 200);
// "a, b, c"
std::string join(const std::vector<std::string>& items);

// Dotted path of the first field (breadth-first from Scenario) whose message type is
// `type`: "cluster.fabric" for Fabric, "" for Scenario itself. "" when unreachable.
std::string path_of(const google::protobuf::Descriptor* type);
// The field that a dotted path ("cluster.fabric.fat_tree.nic_gbps") names; nullptr if none.
const google::protobuf::FieldDescriptor* field_at(std::string_view path);
// Paths of every field in the schema whose name is `name`, breadth-first.
std::vector<std::string> paths_named(std::string_view name);

// Field names of `type` in declaration order.
std::vector<std::string> field_names(const google::protobuf::Descriptor* type);
// Value names of `type`, leaving out the zero *_UNSPECIFIED value (it means "not written").
std::vector<std::string> enum_value_names(const google::protobuf::EnumDescriptor* type);

// The candidate nearest to `name` by edit distance when it is near enough to be a likely
// misspelling; "" otherwise.
std::string closest(std::string_view name, const std::vector<std::string>& candidates);

// "unknown field "foo" in model; did you mean "bar"? (valid: preset, family, …)".
// `json` also accepts and suggests the lowerCamelCase JSON names.
std::string unknown_field_message(const google::protobuf::Descriptor* type, std::string_view name,
                                  bool json);
// "unknown value "GPTX"; did you mean GPT? (valid: GPT, LLAMA)". `value` is a name as
// written, or a number when `is_number` (proto3 enums accept numbers the schema lacks).
std::string unknown_enum_message(const google::protobuf::EnumDescriptor* type, std::string_view value,
                                 bool is_number = false);

}  // namespace trainsim::scenarios::detail
