// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [policy]: the Lua policy, its budgets and its worker processes.
#include "core/toml_policy.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

namespace lanes::config_parse {

void parse_policy_section(ConfigParse& ctx, const toml::table& t) {
    TableReader r(ctx.errors, t, "policy");
    if (auto s = r.string("script")) {
        if (s->empty()) {
            ctx.config.policy.script.clear();
        } else {
            std::filesystem::path script(*s);
            const std::filesystem::path dir = std::filesystem::path(ctx.path).parent_path();
            if (script.is_relative() && !dir.empty()) script = dir / script;
            ctx.config.policy.script = script.lexically_normal().string();
        }
    }
    if (auto v = r.integer("instruction_budget", 1000, 10'000'000'000LL))
        ctx.config.policy.instruction_budget = static_cast<uint64_t>(*v);
    if (const toml::node* n = t.get("memory_limit")) {
        Result<uint64_t> bytes = fail("");
        r.get("memory_limit");
        if (n->is_string()) bytes = parse_bytes(n->as_string()->get());
        else if (n->is_integer() && n->as_integer()->get() >= 0) bytes = static_cast<uint64_t>(n->as_integer()->get());
        else bytes = fail("expected a size such as \"16MiB\", got " + type_name(*n));
        if (!bytes) r.error(*n, "memory_limit", bytes.error().message);
        else if (*bytes < (256u << 10) || *bytes > (4ULL << 30))
            r.error(*n, "memory_limit", "out of range (256KiB..4GiB)");
        else ctx.config.policy.memory_limit_bytes = *bytes;
    }
    if (const toml::node* n = t.get("time_budget")) {
        r.get("time_budget");
        if (!n->is_string()) {
            r.wrong_type(*n, "time_budget", "a duration such as \"20ms\"");
        } else if (auto d = parse_duration(n->as_string()->get()); !d) {
            r.error(*n, "time_budget", d.error().message);
        } else if (*d < std::chrono::microseconds{100} || *d > std::chrono::seconds{10}) {
            r.error(*n, "time_budget", "out of range (100us..10s): job_submit runs under slurmctld's locks");
        } else {
            ctx.config.policy.time_budget = *d;
        }
    }
    if (auto c = r.choice("on_error", {"accept-default", "reject"}))
        ctx.config.policy.on_error = *c == "reject" ? PolicyFailureMode::Reject : PolicyFailureMode::AcceptDefault;
    if (const toml::node* n = t.get("worker")) {
        r.get("worker");
        if (!n->is_string()) r.wrong_type(*n, "worker", "an absolute path");
        else if (n->as_string()->get().empty() || n->as_string()->get().front() != '/')
            r.error(*n, "worker", "must be an absolute path (the lanes-policy-worker program)");
        else ctx.config.policy.worker = n->as_string()->get();
    }
    if (auto v = r.integer("workers", 1, 64)) ctx.config.policy.workers = static_cast<uint32_t>(*v);
    if (auto v = r.integer("queue", 0, 4096)) ctx.config.policy.queue = static_cast<uint32_t>(*v);
    if (auto d = read_duration(r, "overrun_cooldown", std::chrono::seconds{0}, std::chrono::hours{1}, "0s..1h"))
        ctx.config.policy.overrun_cooldown = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    if (const toml::node* n = t.get("metrics_file")) {
        r.get("metrics_file");
        if (!n->is_string()) r.wrong_type(*n, "metrics_file", "an absolute path");
        else if (n->as_string()->get().empty() || n->as_string()->get().front() != '/')
            r.error(*n, "metrics_file", "must be an absolute path (a .prom file for node_exporter)");
        else ctx.config.policy.metrics_file = n->as_string()->get();
    }
    r.finish();
}

}  // namespace lanes::config_parse
