// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [[rules]]: the built-in classification rules.
#include "core/toml_rules.hpp"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "core/toml_classes.hpp"

namespace lanes::config_parse {

void parse_rules_section(ConfigParse& ctx, const toml::node& node) {
    const toml::array* arr = node.as_array();
    if (!arr || !arr->is_array_of_tables()) {
        ctx.errors.add(node.source(), "rules", "expected [[rules]] tables, got " + type_name(node));
        return;
    }
    struct Seen {
        ClassRule rule;
        size_t index;
    };
    std::vector<Seen> seen;
    size_t i = 0;
    for (const toml::node& e : *arr) {
        const toml::table& t = *e.as_table();
        const std::string prefix = "rules[" + std::to_string(i) + "]";
        TableReader r(ctx.errors, t, prefix);
        ClassRule rule;
        rule.line = static_cast<int>(t.source().begin.line);
        r.string("description");
        if (auto v = r.string("class")) {
            rule.class_name = *v;
            check_class_name(ctx, *v, *t.get("class"), r.key("class"));
        } else if (!t.get("class")) {
            r.error_here(prefix, "missing key \"class\" (the class this rule assigns)");
        }
        if (auto v = r.strings("partitions")) rule.partitions = *v;
        if (auto v = r.strings("name")) rule.name_patterns = *v;
        if (auto v = r.strings("accounts")) rule.accounts = *v;
        if (auto v = r.strings("users")) rule.users = *v;
        if (auto v = r.string("gres")) {
            if (v->empty()) r.error(*t.get("gres"), "gres", "must not be empty (e.g. \"gpu\")");
            else rule.gres = *v;
        }
        if (auto v = r.integer("min_gpus", 1, 1'000'000)) rule.min_gpus = static_cast<uint32_t>(*v);
        if (auto v = r.boolean("interactive")) rule.interactive = *v;
        r.finish();

        auto sorted = [](std::vector<std::string> v) {
            std::sort(v.begin(), v.end());
            v.erase(std::unique(v.begin(), v.end()), v.end());
            return v;
        };
        auto matchers = [&](const ClassRule& x) {
            return std::make_tuple(sorted(x.partitions), sorted(x.name_patterns), sorted(x.accounts), sorted(x.users),
                                   x.gres, x.min_gpus, x.interactive);
        };
        for (const auto& s : seen) {
            const bool catch_all = s.rule.partitions.empty() && s.rule.name_patterns.empty() &&
                                   s.rule.accounts.empty() && s.rule.users.empty() && !s.rule.gres &&
                                   !s.rule.min_gpus && !s.rule.interactive;
            if (catch_all || matchers(s.rule) == matchers(rule)) {
                r.error_here(prefix, std::string("this rule can never match: rules[") + std::to_string(s.index) +
                                         "] (line " + std::to_string(s.rule.line) + ") " +
                                         (catch_all ? "matches every job" : "has the same matchers") +
                                         " and comes first");
                break;
            }
        }
        seen.push_back(Seen{rule, i});
        ctx.config.rules.push_back(std::move(rule));
        ++i;
    }
}

}  // namespace lanes::config_parse
