#pragma once
// The semantic rules of a scenario: presets resolved, defaults applied (each one noted),
// every rule checked and every violation reported, then the specs the lower layers take.
#include <string>
#include <string_view>

#include <google/protobuf/text_format.h>

#include "scenarios/loader.hpp"

namespace trainsim::scenarios::detail {

// `tree` holds where each field was written (text format); nullptr for JSON, whose
// diagnostics then carry the field path without a line. `text` (text format only) places
// errors inside a string value: a column of strategy.passes. `layout` SEARCHED: the
// caller has cleared the layout fields (loader.hpp) and the specs take the stand-in.
LoadResult validate(const Scenario& scenario, const std::string& file,
                    const google::protobuf::TextFormat::ParseInfoTree* tree, std::string_view text = {},
                    LayoutFields layout = LayoutFields::WRITTEN);

}  // namespace trainsim::scenarios::detail
