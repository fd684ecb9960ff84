// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl gc: remove the shaping state of jobs that no longer run on this node.
// The rule is spank_lanes' own (node_facts.hpp decide_liveness()): gone only when
// proven, by state from an earlier boot or by slurmctld saying the job ended (or
// no longer knowing it) while nothing of it runs here. Anything uncertain counts
// as alive, a controller that cannot be asked included: gc must never take the
// shaping away from a running job, nor from an allocation that has no step yet.
#include <slurm/slurm.h>

#include <cstdio>
#include <map>
#include <set>

#include "glue/slurm_jobs.hpp"

#include "lanesctl/commands.hpp"
#include "lanesctl/node_report.hpp"
#include "node/node_facts.hpp"
#include "node/node_shaper.hpp"
#include "node/policy_routing.hpp"

namespace lanes::ctl {

Result<std::unique_ptr<NodeShaper>> open_node_shaper(const Context& context);  // cmd_status.cpp
std::optional<NodeConfig> path_node_config(const Context& context);            // cmd_reapply.cpp

namespace {

// In the child that asks slurmctld: slurm.conf (or configless) as for any client.
// Without one libslurm exits, which the parent reports as "cannot use Slurm here".
void init_slurm() { slurm_init(nullptr); }

std::map<uint32_t, ControllerAnswer> ask_controller(const std::vector<uint32_t>& job_ids) {
    return glue::ask_slurmctld(job_ids, glue::kControllerTimeout, init_slurm);
}

}  // namespace

int run_gc(const Options& options, const Context& context) {
    auto shaper = open_node_shaper(context);
    if (!shaper) {
        print_error(shaper.error().message);
        return kExitRuntime;
    }
    GcReport report;
    report.node = context.node;
    report.dry_run = options.dry_run;
    report.all = options.all;
    const auto jobs = (*shaper)->list();
    if (options.all) {
        for (const auto& st : jobs) report.removed.push_back(GcJob{st, "--all"});
        // remove_all() deletes our root qdisc on every selected NIC that has one.
        for (const auto& nic : (*shaper)->nics()) report.devices_reset.push_back(nic.device);
        if (!options.dry_run) {
            auto done = (*shaper)->remove_all();
            if (!done) report.errors.push_back(done.error().message);
        }
    } else {
        const LivenessProbe probe(ask_controller);
        const auto liveness = probe.check_all(jobs);
        std::map<uint32_t, bool> alive;
        for (const auto& st : jobs) {
            const auto& seen = liveness.at(st.job_id);
            alive[st.job_id] = seen.alive;
            (seen.alive ? report.kept : report.removed).push_back(GcJob{st, seen.why});
        }
        if (!options.dry_run && !report.removed.empty()) {
            auto removed = (*shaper)->reconcile([&alive](const JobState& st) {
                auto it = alive.find(st.job_id);
                // A job that appeared after the scan: its prolog just ran, keep it.
                return it == alive.end() || it->second;
            });
            if (!removed) report.errors.push_back(removed.error().message);
        }
    }
    // A path per class: records of jobs that have no state here any more (their
    // shaping was just removed, or never was) go, and with them the rules,
    // routes and elements no remaining job wants.
    if (auto node = path_node_config(context)) {
        std::set<uint32_t> kept;
        for (const auto& j : report.kept) kept.insert(j.state.job_id);
        auto paths = converge_node_paths(*node, options.dry_run, [&](uint32_t job) { return kept.count(job) > 0; });
        if (!paths) report.errors.push_back("paths: " + paths.error().message);
        else if (!options.json)
            for (const auto& line : *paths) print_human(context.node + ": path: " + line + "\n");
    }
    if (options.json) {
        print_json(gc_json(report));
    } else {
        std::string text = format_gc_human(report);
        print_human(text, report.errors.empty() ? stdout : stderr);
    }
    return report.errors.empty() ? kExitOk : kExitRuntime;
}

}  // namespace lanes::ctl
