// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl reconcile (alias reapply): NodeShaper::converge(): bring this node's
// kernel back to every running job's desired state (its state file): the root
// qdisc, the jobs' classes (the ceil in force, a busy ceil included) and leaf
// qdiscs on every selected NIC (one that came up since the prolog included), the
// nft table and elements, the GSO bound. What `nft flush ruleset` (or `systemctl
// reload nftables`, whose nftables.conf starts with it), a `tc qdisc del` or a
// hand-typed `tc class change` took. Nothing changes when everything is in place.
// lanes-reconcile.timer runs it on nodes without lanes-agent.
#include <cstdio>
#include <string>

#include "lanesctl/commands.hpp"
#include "lanesctl/json.hpp"
#include "node/node_shaper.hpp"
#include "node/policy_routing.hpp"

namespace lanes::ctl {

Result<std::unique_ptr<NodeShaper>> open_node_shaper(const Context& context);  // cmd_status.cpp

// This node's [nodes] (state_dir with %n resolved), for the paths' records.
std::optional<NodeConfig> path_node_config(const Context& context) {
    auto config = load_config(context.config_path);
    if (!config) return std::nullopt;
    auto node = node_config_for(config->node, context.node);
    if (!node) return std::nullopt;
    return *node;
}

namespace {
json::Array path_array(const std::vector<std::string>& lines) {
    json::Array out;
    for (const auto& l : lines) out.push_back(l);
    return out;
}
}  // namespace

int run_reapply(const Options& options, const Context& context) {
    auto shaper = open_node_shaper(context);
    if (!shaper) {
        print_error(shaper.error().message);
        return kExitRuntime;
    }
    auto done = (*shaper)->converge(options.dry_run);
    if (!done) {
        print_error(done.error().message);
        return kExitRuntime;
    }
    // A path per class: the rules, routes and elements of the jobs on paths.
    std::vector<std::string> path_repairs;
    if (auto node = path_node_config(context)) {
        auto paths = converge_node_paths(*node, options.dry_run);
        if (paths) path_repairs = *paths;
        else done->problems.push_back("paths: " + paths.error().message);
    }
    const bool needed = !done->repairs.empty() || !path_repairs.empty();
    if (options.json) {
        json::Array repairs;
        std::string missing;
        for (const auto& r : done->repairs) {
            repairs.push_back(json::Object{{"object", r.object},
                                           {"cause", r.cause},
                                           {"job_id", static_cast<int64_t>(r.job_id)},
                                           {"device", r.device},
                                           {"detail", r.detail}});
            missing += (missing.empty() ? "" : "; ") + r.object + " " + r.cause;
        }
        json::Array problems;
        for (const auto& p : done->problems) problems.push_back(p);
        print_json(json::Object{{"node", context.node},
                                {"dry_run", options.dry_run},
                                {"jobs", static_cast<int64_t>(done->jobs)},
                                {"missing", missing},
                                {"reapplied", needed && !options.dry_run},
                                {"repairs", repairs},
                                {"path_repairs", path_array(path_repairs)},
                                {"problems", problems}});
    } else {
        for (const auto& r : done->repairs)
            print_human(context.node + ": " + (options.dry_run ? "would reapply (dry run)" : "reapplied") + ": " +
                        r.object + " " + r.cause + (r.job_id ? " JobId=" + std::to_string(r.job_id) : "") +
                        (r.device.empty() ? "" : " on " + r.device) + ": " + r.detail + "\n");
        for (const auto& p : path_repairs)
            print_human(context.node + ": " + (options.dry_run ? "would reapply (dry run)" : "reapplied") +
                        ": path: " + p + "\n");
        for (const auto& p : done->problems) print_human(context.node + ": " + p + "\n", stderr);
        if (!needed)
            print_human(context.node + ": all " + std::to_string(done->jobs) +
                        " job(s) marked and shaped as desired; nothing to reapply\n");
    }
    return options.dry_run && needed ? kExitFailed : kExitOk;
}

}  // namespace lanes::ctl
