// SPDX-License-Identifier: GPL-2.0-or-later
#include "lanesctl/json.hpp"

#include <set>
#include <vector>

#include "core/text.hpp"

namespace lanes::json {

namespace {

constexpr int kMaxDepth = 128;

// Thrown from the parser callback; caught in parse().
struct Refused {
    std::string message;
};

// "[json.exception.parse_error.101] parse error at line 2, column 5: syntax error ..."
// -> "2:5: syntax error ..."
std::string parse_error_text(const std::string& what) {
    std::string s = what;
    if (auto b = s.find("] "); s.rfind("[json.exception.", 0) == 0 && b != std::string::npos) s.erase(0, b + 2);
    auto at = s.find("at line ");
    if (s.rfind("parse error ", 0) == 0 && at != std::string::npos) {
        size_t i = at + 8, line_end = s.find(", column ", i);
        if (line_end != std::string::npos) {
            size_t col = line_end + 9, colon = s.find(": ", col);
            if (colon != std::string::npos)
                return s.substr(i, line_end - i) + ":" + s.substr(col, colon - col) + ": " + s.substr(colon + 2);
        }
    }
    return s;
}

}  // namespace

Result<Value> parse(std::string_view text) {
    // Keys seen in each open object, innermost last: a duplicate is an error
    // (nlohmann would keep the last one silently).
    std::vector<std::set<std::string>> keys;
    auto check = [&keys](int depth, Value::parse_event_t event, Value& parsed) -> bool {
        if (depth > kMaxDepth) throw Refused{"nesting deeper than " + std::to_string(kMaxDepth)};
        switch (event) {
            case Value::parse_event_t::object_start: keys.emplace_back(); break;
            case Value::parse_event_t::object_end: keys.pop_back(); break;
            case Value::parse_event_t::key:
                if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
                    throw Refused{"duplicate key \"" + parsed.get<std::string>() + "\""};
                break;
            default: break;
        }
        return true;
    };
    try {
        return Value::parse(text.begin(), text.end(), check);
    } catch (const Refused& e) {
        return fail(e.message);
    } catch (const nlohmann::json::exception& e) {
        return fail(parse_error_text(e.what()));
    } catch (const std::exception& e) {
        return fail(e.what());
    }
}

std::string write(const Value& value, int indent) {
    // Invalid UTF-8 (job names, comments, messages come from users) becomes
    // U+FFFD, C0 controls \u00XX; what nlohmann leaves raw and a terminal obeys
    // (DEL, C1, bidirectional controls) is escaped too.
    return json_escape_raw_controls(value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace));
}

const Value* find(const Value& value, std::string_view key) {
    if (!value.is_object()) return nullptr;
    auto it = value.find(key);
    return it == value.end() ? nullptr : &*it;
}

}  // namespace lanes::json
