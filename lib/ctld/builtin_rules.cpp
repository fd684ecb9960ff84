// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/builtin_rules.hpp"
#include "core/text.hpp"

#include <fnmatch.h>

#include <algorithm>

namespace lanes {

namespace {

// Calls f(item) for each comma-separated, non-empty item of s.
template <typename F>
bool any_item(std::string_view s, F f) {
    while (!s.empty()) {
        size_t comma = s.find(',');
        std::string_view item = s.substr(0, comma);
        if (!item.empty() && f(item)) return true;
        if (comma == std::string_view::npos) break;
        s.remove_prefix(comma + 1);
    }
    return false;
}

bool gres_in(std::string_view tres, std::string_view gres) {
    return any_item(tres, [&](std::string_view item) {
        if (item.starts_with("gres:") || item.starts_with("gres/")) item.remove_prefix(5);
        if (!item.starts_with(gres)) return false;
        return item.size() == gres.size() || item[gres.size()] == ':';
    });
}

}  // namespace

bool listed(const std::vector<std::string>& list, std::string_view name) {
    for (const auto& item : list)
        if (item == "*" || (!name.empty() && item == name)) return true;
    return false;
}

bool tres_requests_gres(const JobView& job, std::string_view gres) {
    if (gres.empty()) return false;
    return gres_in(job.tres_per_node, gres) || gres_in(job.tres_per_job, gres);
}

bool rule_matches(const ClassRule& rule, const JobView& job) {
    if (!rule.partitions.empty() &&
        !any_item(job.partition, [&](std::string_view p) { return contains(rule.partitions, p); }))
        return false;
    if (!rule.name_patterns.empty()) {
        bool any = false;
        for (const auto& pattern : rule.name_patterns)
            if (fnmatch(pattern.c_str(), job.name.c_str(), 0) == 0) {
                any = true;
                break;
            }
        if (!any) return false;
    }
    if (!rule.accounts.empty() && !contains(rule.accounts, job.account)) return false;
    if (!rule.users.empty() && !contains(rule.users, job.user)) return false;
    if (rule.gres && !tres_requests_gres(job, *rule.gres)) return false;
    if (rule.min_gpus && job.gpus < *rule.min_gpus) return false;
    if (rule.interactive && *rule.interactive != !job.batch) return false;
    return true;
}

const ClassRule* match_rules(const std::vector<ClassRule>& rules, const JobView& job) {
    for (const auto& rule : rules)
        if (rule_matches(rule, job)) return &rule;
    return nullptr;
}

std::string describe_rule(const std::vector<ClassRule>& rules, const ClassRule& rule, const std::string& config_path) {
    size_t index = static_cast<size_t>(&rule - rules.data()) + 1;
    std::string s = "rule " + std::to_string(index);
    if (rule.line > 0) {
        std::string file = config_path.empty() ? "lanes.toml" : config_path;
        size_t slash = file.rfind('/');
        if (slash != std::string::npos) file = file.substr(slash + 1);
        s += " (" + file + ":" + std::to_string(rule.line) + ")";
    }
    return s;
}

}  // namespace lanes
