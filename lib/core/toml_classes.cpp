// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [classes.NAME]: routing, windows and network settings per class.
#include "core/toml_classes.hpp"

#include "core/toml_control.hpp"
#include "core/toml_paths.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace lanes::config_parse {
namespace {

// Slurm accepts --nice values in this range.
constexpr int64_t kMaxNice = 2147483645;

// ingress_rate/ingress_ceil: the rules of rate/ceil, for what reaches the job.
void read_ingress_caps(TableReader& r, const toml::table& t, ClassConfig& c) {
    c.ingress_rate = read_rate(r, "ingress_rate", false);
    c.ingress_ceil = read_rate(r, "ingress_ceil", false);
    if (c.ingress_ceil && !t.get("ingress_rate"))
        r.error(*t.get("ingress_ceil"), "ingress_ceil",
                "ingress_ceil needs an ingress_rate (the guaranteed bandwidth); set \"ingress_rate\" as well");
    if (c.ingress_rate && c.ingress_ceil && c.ingress_rate->is_relative() == c.ingress_ceil->is_relative()) {
        const bool below = c.ingress_rate->is_relative()
                               ? c.ingress_ceil->percent < c.ingress_rate->percent
                               : c.ingress_ceil->bits_per_second < c.ingress_rate->bits_per_second;
        if (below) {
            const std::string rs = t.get("ingress_rate")->value_or(std::string()),
                              cs = t.get("ingress_ceil")->value_or(std::string());
            r.error(*t.get("ingress_ceil"), "ingress_ceil",
                    "ingress_ceil " + quote(cs) + " is below ingress_rate " + quote(rs) +
                        " (ceil is the most a job may receive, rate what it is guaranteed)");
        }
    }
    if (c.ingress_rate && !c.ingress_ceil && !t.get("ingress_ceil")) c.ingress_ceil = c.ingress_rate;
}

void parse_class(ConfigParse& ctx, const std::string& name, const toml::table& t) {
    const std::string prefix = "classes." + name;
    TableReader r(ctx.errors, t, prefix);
    ClassConfig c;
    c.name = name;
    r.string("description");
    if (auto v = r.integer("rank", 0, 7)) c.rank = static_cast<int>(*v);
    if (auto v = r.strings("partitions")) c.partitions = *v;
    if (auto v = r.string("qos")) c.qos = *v;
    if (auto v = r.strings("features")) c.features = *v;
    if (auto v = r.integer("nice", -kMaxNice, kMaxNice)) c.nice = static_cast<int32_t>(*v);
    if (auto v = r.strings("avoid_windows")) {
        const toml::node& n = *t.get("avoid_windows");
        std::vector<std::string> known;
        for (const auto& [wn, w] : ctx.config.window_specs.clock) known.push_back(wn);
        for (const auto& [wn, w] : ctx.config.signal_windows) known.push_back(wn);
        for (const auto& wname : *v) {
            if (ctx.config.window_specs.clock.count(wname) || ctx.config.signal_windows.count(wname) ||
                ctx.broken_windows.count(wname)) {
                if (std::find(c.avoid_windows.begin(), c.avoid_windows.end(), wname) == c.avoid_windows.end())
                    c.avoid_windows.push_back(wname);
                continue;
            }
            std::string msg = "unknown window " + quote(wname);
            if (auto s = closest(wname, known); !s.empty()) msg += " (did you mean " + quote(s) + "?)";
            else if (known.empty()) msg += " (no [windows.NAME] tables are defined)";
            else msg += " (defined: " + join_quoted(known) + ")";
            r.error(n, "avoid_windows", msg);
        }
    }
    if (auto v = r.choice("window_overrun", {"defer", "shorten", "warn", "reject"})) {
        if (*v == "defer") c.window_overrun = OverrunAction::Defer;
        else if (*v == "shorten") c.window_overrun = OverrunAction::Shorten;
        else if (*v == "warn") c.window_overrun = OverrunAction::Warn;
        else c.window_overrun = OverrunAction::Reject;
    }
    if (auto v = r.strings("borrow_partitions")) {
        c.borrow_partitions = *v;
        if (!t.get("avoid_windows"))
            r.error(*t.get("borrow_partitions"), "borrow_partitions",
                    "borrowing happens outside the class's avoid_windows, but the class has none");
    }
    if (auto v = r.strings("exempt_users")) c.exempt_users = *v;
    if (auto v = r.strings("exempt_accounts")) c.exempt_accounts = *v;
    if (auto v = r.strings("allowed_users")) c.allowed_users = *v;
    if (auto v = r.strings("allowed_accounts")) c.allowed_accounts = *v;
    if (auto v = r.strings("policy_overrides")) {
        static const std::vector<std::string> fields = {"partition", "qos",        "features",
                                                        "nice",      "begin_time", "time_limit"};
        const toml::node& n = *t.get("policy_overrides");
        for (const auto& f : *v) {
            if (std::find(fields.begin(), fields.end(), f) == fields.end()) {
                std::string msg = "unknown field " + quote(f);
                if (auto s = closest(f, fields); !s.empty()) msg += " (did you mean " + quote(s) + "?)";
                else msg += " (expected " + join_quoted(fields) + ")";
                r.error(n, "policy_overrides", msg);
            } else if (std::find(c.policy_overrides.begin(), c.policy_overrides.end(), f) == c.policy_overrides.end()) {
                c.policy_overrides.push_back(f);
            }
        }
    }
    if (const toml::node* n = t.get("dscp")) {
        r.get("dscp");
        if (n->is_integer()) {
            const int64_t v = n->as_integer()->get();
            if (v < 0 || v > 63) r.error(*n, "dscp", "value " + std::to_string(v) + " is out of range (0..63)");
            else c.dscp = static_cast<uint8_t>(v);
        } else if (n->is_string()) {
            auto d = parse_dscp(n->as_string()->get());
            if (!d) r.error(*n, "dscp", d.error().message);
            else c.dscp = *d;
        } else {
            r.wrong_type(*n, "dscp", "a DSCP name such as \"CS1\" or a number 0..63");
        }
    }
    c.rate = read_rate(r, "rate", false);
    c.ceil = read_rate(r, "ceil", false);
    if (c.ceil && !t.get("rate")) {
        r.error(*t.get("ceil"), "ceil", "ceil needs a rate (the guaranteed bandwidth); set \"rate\" as well");
    }
    if (c.rate && c.ceil && c.rate->is_relative() == c.ceil->is_relative()) {
        const bool below = c.rate->is_relative() ? c.ceil->percent < c.rate->percent
                                                 : c.ceil->bits_per_second < c.rate->bits_per_second;
        if (below) {
            const std::string rs = t.get("rate")->value_or(std::string()), cs = t.get("ceil")->value_or(std::string());
            r.error(*t.get("ceil"), "ceil",
                    "ceil " + quote(cs) + " is below rate " + quote(rs) +
                        " (ceil is the most a job may use, rate what it is guaranteed)");
        }
    }
    if (c.rate && !c.ceil && !t.get("ceil")) c.ceil = c.rate;  // HTB: ceil defaults to rate
    read_ingress_caps(r, t, c);
    if (auto v = r.boolean("user_may_lower_cap")) c.user_may_lower_cap = *v;
    if (auto v = r.integer("rdma_traffic_class", 0, 255)) c.rdma_traffic_class = static_cast<uint8_t>(*v);
    if (auto v = r.integer("rdma_service_level", 0, 15)) c.rdma_service_level = static_cast<uint8_t>(*v);
    if (auto v = r.string("busy_window")) {
        if (ctx.config.signal_windows.count(*v)) {
            c.busy_window = *v;
        } else if (!ctx.broken_windows.count(*v)) {
            std::vector<std::string> known;
            for (const auto& [wn, w] : ctx.config.signal_windows) known.push_back(wn);
            std::string msg =
                ctx.config.window_specs.clock.count(*v)
                    ? "window " + quote(*v) + " follows the clock; busy_window must name a window with a \"signal\""
                    : "unknown signal window " + quote(*v);
            if (!ctx.config.window_specs.clock.count(*v)) {
                if (auto s = closest(*v, known); !s.empty()) msg += " (did you mean " + quote(s) + "?)";
                else if (known.empty()) msg += " (no [windows.NAME] table has a \"signal\")";
                else msg += " (defined: " + join_quoted(known) + ")";
            }
            r.error(*t.get("busy_window"), "busy_window", msg);
        }
    }
    c.busy_ceil = read_rate(r, "busy_ceil", false);
    if (t.get("busy_ceil") && !t.get("busy_window"))
        r.error(*t.get("busy_ceil"), "busy_ceil", "needs \"busy_window\" (the signal window during which it applies)");
    if (t.get("busy_window") && !t.get("busy_ceil"))
        r.error(*t.get("busy_window"), "busy_window", "needs \"busy_ceil\" (the ceil jobs get while the window holds)");
    if (t.get("busy_ceil") && !t.get("rate"))
        r.error(*t.get("busy_ceil"), "busy_ceil", "the class has no \"rate\"/\"ceil\" to shift from");
    if (c.busy_ceil && c.ceil && c.busy_ceil->is_relative() == c.ceil->is_relative()) {
        const bool above = c.ceil->is_relative() ? c.busy_ceil->percent > c.ceil->percent
                                                 : c.busy_ceil->bits_per_second > c.ceil->bits_per_second;
        if (above)
            r.error(*t.get("busy_ceil"), "busy_ceil",
                    "above the class's ceil (a busy ceil tightens, it never loosens)");
    }
    parse_class_path(r, t, c);
    parse_class_control(ctx, r, c);
    r.finish();
    ctx.config.classes[name] = std::move(c);
}

// Class names: the ones that exist, for "did you mean".
std::vector<std::string> class_names(const ConfigParse& ctx) {
    std::vector<std::string> out;
    for (const auto& [n, c] : ctx.config.classes) out.push_back(n);
    return out;
}

}  // namespace

void parse_classes_section(ConfigParse& ctx, const toml::table& t) {
    for (auto&& [k, v] : t) {
        const std::string name(k.str());
        const std::string key = "classes." + name;
        if (!valid_name(name)) {
            ctx.errors.add(k.source(), key, "class names may use letters, digits, '-' and '_' only (at most 63)");
            continue;
        }
        if (const toml::table* ct = v.as_table()) parse_class(ctx, name, *ct);
        else ctx.errors.add(v.source(), key, "expected a table [classes." + name + "], got " + type_name(v));
    }
}

void check_class_name(ConfigParse& ctx, const std::string& name, const toml::node& where, const std::string& key) {
    if (ctx.config.classes.count(name) || ctx.broken_classes.count(name)) return;
    std::string msg = "unknown class " + quote(name);
    auto names = class_names(ctx);
    if (auto s = closest(name, names); !s.empty()) msg += " (did you mean " + quote(s) + "?)";
    else if (names.empty()) msg += " (no [classes.NAME] tables are defined)";
    else msg += " (defined: " + join_quoted(names) + ")";
    ctx.errors.add(where.source(), key, msg);
}

}  // namespace lanes::config_parse
