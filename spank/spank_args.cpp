// SPDX-License-Identifier: GPL-2.0-or-later
#include "spank/spank_args.hpp"

#include <cctype>

#include "core/cap_request.hpp"
#include "core/lanes_toml.hpp"

namespace lanes {

namespace {

Result<bool> parse_bool(const std::string& key, const std::string& value) {
    if (value == "yes" || value == "true" || value == "1") return true;
    if (value == "no" || value == "false" || value == "0") return false;
    return fail("spank_lanes: " + key + "=" + value + ": expected yes or no");
}

}  // namespace

Result<SpankArgs> parse_spank_args(const std::vector<std::string>& args, const std::string& default_config) {
    SpankArgs parsed;
    parsed.config_path = default_config;
    for (const auto& arg : args) {
        auto eq = arg.find('=');
        if (eq == std::string::npos)
            return fail("spank_lanes: plugstack argument '" + arg +
                        "' is not key=value (known: config, reconcile, last_good_config)");
        std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
        if (key == "config") {
            if (value.empty() || value[0] != '/')
                return fail("spank_lanes: config=" + value + ": must be an absolute path");
            parsed.config_path = value;
        } else if (key == "last_good_config") {
            if (value.empty() || value[0] != '/')
                return fail("spank_lanes: last_good_config=" + value + ": must be an absolute path");
            parsed.last_good_config = value;
        } else if (key == "reconcile") {
            auto b = parse_bool(key, value);
            if (!b) return std::unexpected(b.error());
            parsed.reconcile_on_start = *b;
        } else {
            return fail("spank_lanes: unknown plugstack argument '" + key +
                        "' (known: config, reconcile, last_good_config)");
        }
    }
    return parsed;
}

Result<std::string> check_class_option(const std::string& value) {
    if (value.empty() || value.size() > 64) return fail("--lanes-class: expected a class name of 1 to 64 characters");
    for (char c : value)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
            return fail("--lanes-class=" + value + ": a class name has only letters, digits, '_' and '-'");
    return value;
}

Result<std::string> check_cap_option(const std::string& value) {
    auto cap = parse_cap_request(value);
    if (!cap) return fail("--lanes-cap=" + value + ": " + cap.error().message);
    // A rate or a percentage: job_submit/lanes compares it with the class cap in
    // the same form (a class with a percentage ceiling takes a percentage).
    return value;
}

}  // namespace lanes
