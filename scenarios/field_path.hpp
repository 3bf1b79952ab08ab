#pragma once
// A scalar field of a Scenario named by its dotted path ("cluster.fabric.fat_tree.nic_gbps"),
// read and written through protobuf reflection: what a sweep axis sets and a constraint reads.
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "scenarios/scenario.pb.h"

namespace trainsim::scenarios {

struct FieldPath {
  std::string text;
  std::vector<const google::protobuf::FieldDescriptor*> fields;  // messages, then the scalar
  const google::protobuf::FieldDescriptor* leaf() const { return fields.back(); }
};

// The path resolved, or why not (an unknown name with what would be valid, a message or
// repeated field, the sweep block itself).
std::variant<FieldPath, std::string> resolve_field(std::string_view path);

// Sets the field from its text-format value (a string field takes the text as it is);
// returns an error message when the field cannot take it.
std::string set_field(Scenario& scenario, const FieldPath& path, const std::string& value);

// A field's value: a number (integers, floats, bools as 0/1) or a string (strings, enum names).
using FieldValue = std::variant<double, std::string>;
FieldValue get_field(const Scenario& scenario, const FieldPath& path);

// Every scalar field of a Scenario outside the sweep block, depth first in field-number order.
const std::vector<FieldPath>& scalar_fields();
// The field's value as text format writes it ("" when a proto3 optional field is unset).
std::string field_text(const Scenario& scenario, const FieldPath& path);

}  // namespace trainsim::scenarios
