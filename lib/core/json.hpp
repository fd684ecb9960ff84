// A small, strict JSON (RFC 8259) reader and writer: golden fixtures, lanesctl
// job files and --json output, Prometheus API answers. No exceptions leave it;
// errors name line:col.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/result.hpp"

namespace lanes::json {

struct Value;
using Array = std::vector<Value>;
// Objects keep their members in document order; duplicate keys are parse errors.
using Object = std::vector<std::pair<std::string, Value>>;

struct Value {
    // Integers without fraction/exponent that fit int64 stay integers.
    std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> v;

    Value() : v(nullptr) {}
    Value(std::nullptr_t) : v(nullptr) {}
    Value(bool b) : v(b) {}
    Value(int64_t i) : v(i) {}
    Value(int i) : v(static_cast<int64_t>(i)) {}
    Value(double d) : v(d) {}
    Value(std::string s) : v(std::move(s)) {}
    Value(const char* s) : v(std::string(s)) {}
    Value(Array a) : v(std::move(a)) {}
    Value(Object o) : v(std::move(o)) {}

    bool is_null() const { return std::holds_alternative<std::nullptr_t>(v); }
    bool is_bool() const { return std::holds_alternative<bool>(v); }
    bool is_int() const { return std::holds_alternative<int64_t>(v); }
    bool is_number() const { return is_int() || std::holds_alternative<double>(v); }
    bool is_string() const { return std::holds_alternative<std::string>(v); }
    bool is_array() const { return std::holds_alternative<Array>(v); }
    bool is_object() const { return std::holds_alternative<Object>(v); }

    bool as_bool() const { return std::get<bool>(v); }
    int64_t as_int() const { return std::get<int64_t>(v); }
    double as_double() const { return is_int() ? static_cast<double>(as_int()) : std::get<double>(v); }
    const std::string& as_string() const { return std::get<std::string>(v); }
    const Array& as_array() const { return std::get<Array>(v); }
    const Object& as_object() const { return std::get<Object>(v); }
    Object& as_object() { return std::get<Object>(v); }

    // Object member lookup; nullptr when absent or not an object.
    const Value* find(std::string_view key) const;
    const char* type_name() const;
};

// Parse one JSON text (surrounding whitespace allowed, nothing else).
// Errors: "line:col: what is wrong". Nesting deeper than 128 is an error.
Result<Value> parse(std::string_view text);

// Serialise. indent < 0: compact; otherwise pretty with that many spaces.
std::string write(const Value& value, int indent = -1);
// A JSON string literal with quotes, escaping control characters.
std::string quote(std::string_view s);

}  // namespace lanes::json
