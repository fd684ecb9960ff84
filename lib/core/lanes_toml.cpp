// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml: parse with toml++ and validate into lanes::Config.
//
// This file reads the file and dispatches the top-level tables, in the order
// their references need, to one parser per section (toml_<section>.cpp); the
// reading kit they share is toml_reader.hpp. Every problem is reported as
// "path:line:col: key.path: what is wrong"; all problems found are reported
// together, sorted by position, one per line.
#include <toml++/toml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "core/lanes_toml.hpp"
#include "core/toml_agent.hpp"
#include "core/toml_classes.hpp"
#include "core/toml_nodes.hpp"
#include "core/toml_policy.hpp"
#include "core/toml_reader.hpp"
#include "core/toml_rules.hpp"
#include "core/toml_signals.hpp"
#include "core/toml_windows.hpp"

namespace lanes {
namespace {

using namespace config_parse;

constexpr size_t kMaxConfigBytes = 4u << 20;

void parse(ConfigParse& ctx, const toml::table& root) {
    TableReader r(ctx.errors, root, "");
    // Signals, then windows (which may follow signals), then classes: later
    // tables refer to earlier ones, whatever the order in the file.
    if (const toml::node* n = r.get("signals")) {
        if (const toml::table* t = n->as_table()) parse_signals_section(ctx, *t);
        else r.wrong_type(*n, "signals", "a table");
    }
    if (const toml::node* n = r.get("windows")) {
        if (const toml::table* t = n->as_table()) parse_windows_section(ctx, *t);
        else r.wrong_type(*n, "windows", "a table");
    }
    if (const toml::node* n = r.get("policy")) {
        if (const toml::table* t = n->as_table()) parse_policy_section(ctx, *t);
        else r.wrong_type(*n, "policy", "a table");
    }
    if (const toml::node* n = r.get("classes")) {
        if (const toml::table* t = n->as_table()) {
            // Names first, so rules and default_class can refer to broken classes
            // without a second, misleading error.
            for (auto&& [k, v] : *t)
                if (valid_name(k.str())) ctx.broken_classes.insert(std::string(k.str()));
            parse_classes_section(ctx, *t);
            for (const auto& [cn, c] : ctx.config.classes) ctx.broken_classes.erase(cn);
        } else {
            r.wrong_type(*n, "classes", "a table");
        }
    }
    if (ctx.config.classes.empty() && ctx.broken_classes.empty())
        ctx.errors.add(root.source(), "classes", "no classes defined (add at least one [classes.NAME] table)");
    if (auto v = r.string("default_class")) {
        ctx.config.default_class = *v;
        check_class_name(ctx, *v, *root.get("default_class"), "default_class");
    } else if (!root.get("default_class") && !ctx.config.classes.empty()) {
        if (ctx.config.classes.size() == 1) {
            ctx.config.default_class = ctx.config.classes.begin()->first;
        } else {
            ctx.errors.add(root.source(), "default_class",
                           "missing: with several classes, say which one a job gets when nothing else decides "
                           "(e.g. default_class = " +
                               quote(ctx.config.classes.begin()->first) + ")");
        }
    }
    if (const toml::node* n = r.get("rules")) parse_rules_section(ctx, *n);
    if (const toml::node* n = r.get("nodes")) {
        if (const toml::table* t = n->as_table()) parse_nodes_section(ctx, *t);
        else r.wrong_type(*n, "nodes", "a table");
    }
    if (const toml::node* n = r.get("agent")) {
        if (const toml::table* t = n->as_table()) parse_agent_section(ctx, *t);
        else r.wrong_type(*n, "agent", "a table");
    }
    r.finish();
    note_avoid_windows(ctx, root);
}

}  // namespace

Result<Config> parse_config(std::string_view text, const std::string& path, ConfigPass pass) {
    ConfigParse p(path);
#ifdef LANES_POLICY_WORKER
    p.config.policy.worker = LANES_POLICY_WORKER;  // $(libexecdir)/lanes/lanes-policy-worker
#endif
    // A build tree's worker (make check); lanes.toml's [policy] worker wins.
    if (const char* env = secure_getenv("LANES_POLICY_WORKER"); env && *env) p.config.policy.worker = env;
    toml::table root;
    try {
        root = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        return fail(std::vector<Diagnostic>{Diagnostic{path, static_cast<int>(b.line), static_cast<int>(b.column), "",
                                                       "syntax error: " + std::string(e.description())}});
    } catch (const std::exception& e) {
        return fail(path + ": cannot parse: " + e.what());
    }
    try {
        parse(p, root);
        if (pass) {
            p.config.path = path;
            std::vector<Diagnostic> more;
            pass(p.config, more);
            for (auto& d : more) p.errors.add(std::move(d));
        }
    } catch (const std::exception& e) {  // out of memory and the like: never leave lib/ as an exception
        return fail(path + ": internal error while validating: " + e.what());
    }
    if (!p.errors.empty()) return fail(p.errors.sorted());
    p.config.path = path;
    p.config.text = std::string(text);
    return std::move(p.config);
}

Result<Config> load_config(const std::string& path, ConfigPass pass) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(path + ": cannot open: " + std::strerror(errno));
    std::string text;
    char buf[65536];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, static_cast<size_t>(in.gcount()));
        if (text.size() > kMaxConfigBytes) return fail(path + ": too large for a configuration file (over 4 MiB)");
    }
    if (in.bad()) return fail(path + ": cannot read: " + std::strerror(errno));
    return parse_config(text, path, pass);
}

std::string default_config_path(bool honour_environment) {
    if (honour_environment) {
        if (const char* env = secure_getenv("LANES_CONFIG"); env && *env) return env;
        // lanes.toml next to slurm.conf when the daemon or tool was pointed at another slurm.conf.
        if (const char* conf = secure_getenv("SLURM_CONF"); conf && *conf) {
            const std::string c(conf);
            if (const auto slash = c.rfind('/'); slash != std::string::npos)
                return c.substr(0, slash + 1) + "lanes.toml";
        }
    }
    return LANES_DEFAULT_CONFIG;
}

std::string_view unknown_signal_action_name(UnknownSignalAction action) {
    switch (action) {
        case UnknownSignalAction::Idle: return "idle";
        case UnknownSignalAction::Busy: return "busy";
        case UnknownSignalAction::Hold: return "hold";
    }
    return "busy";
}

}  // namespace lanes
