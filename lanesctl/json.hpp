// SPDX-License-Identifier: GPL-2.0-or-later
// JSON for lanesctl only (--json output, golden fixtures, job files), on
// nlohmann-json. Objects keep document order (ordered_json), so output is stable.
// No exception leaves parse() or write(): parse errors are "line:col: ..." and
// duplicate keys are errors; write() replaces invalid UTF-8 (job names, comments
// and messages come from users) with U+FFFD instead of passing it through.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace lanes::json {

using Value = nlohmann::ordered_json;
using Array = Value::array_t;
using Object = Value::object_t;

// Parse one JSON text (surrounding whitespace allowed, nothing else).
// Nesting deeper than 128 is an error.
Result<Value> parse(std::string_view text);

// Serialise. indent < 0: compact; otherwise pretty with that many spaces.
std::string write(const Value& value, int indent = -1);

// Object member lookup; nullptr when absent or `value` is not an object.
const Value* find(const Value& value, std::string_view key);

}  // namespace lanes::json
