// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl status: the jobs NodeShaper keeps on this node, with HTB counters;
// optionally node_exporter textfile metrics written atomically.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/lanes_toml.hpp"
#include "ctld/windows_config.hpp"
#include "lanesctl/agent_status.hpp"
#include "lanesctl/commands.hpp"
#include "lanesctl/node_report.hpp"
#include "node/node_facts.hpp"
#include "node/node_shaper.hpp"
#include "node/policy_routing.hpp"

namespace lanes::ctl {

// Shared with cmd_gc.cpp: open the node's shaper from lanes.toml, as spank_lanes does.
std::optional<NodeConfig> path_node_config(const Context& context);  // cmd_reapply.cpp

Result<std::unique_ptr<NodeShaper>> open_node_shaper(const Context& context) {
    if (geteuid() != 0) return fail("must run as root (reads the Lanes state directory and the kernel's tc/nft state)");
    auto config = load_controller_config(context.config_path);
    if (!config) return std::unexpected(config.error());
    LogSink log = [](LogLevel level, const std::string& line) {
        if (level == LogLevel::Error) print_error(line);
    };
    // "%n" in state_dir/cgroup_root is the node name, as in spank_lanes.
    auto node = node_config_for(config->node, context.node);
    if (!node) return std::unexpected(node.error());
    return NodeShaper::open(*node, context.node, log);
}

namespace {

// lanes-agent's <state_dir>/agent/status, if there is one.
std::optional<AgentStatus> read_agent_status(const Context& context) {
    auto config = load_controller_config(context.config_path);
    if (!config) return std::nullopt;
    auto node = node_config_for(config->node, context.node);
    if (!node) return std::nullopt;
    std::ifstream in(node->state_dir + "/agent/status");
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    auto status = parse_agent_status(text.str());
    if (status) status->running = ::kill(static_cast<pid_t>(status->pid), 0) == 0 || errno == EPERM;
    return status;
}

}  // namespace

int run_status(const Options& options, const Context& context) {
    auto shaper = open_node_shaper(context);
    if (!shaper) {
        print_error(shaper.error().message);
        return kExitRuntime;
    }
    StatusReport report;
    report.node = context.node;
    report.leaf_qdisc = (*shaper)->leaf_qdisc_kind();
    report.nics = (*shaper)->nics();
    const auto path_node = path_node_config(context);
    for (auto& state : (*shaper)->list()) {
        JobStatus job;
        auto counters = (*shaper)->counters(state.job_id);
        if (counters) job.counters = std::move(*counters);
        else job.error = counters.error().message;
        if (job.error.empty()) {
            auto ingress = (*shaper)->ingress_counters(state.job_id);
            if (ingress) job.ingress_counters = std::move(*ingress);
            else job.error = ingress.error().message;
        }
        if (path_node) job.path = job_path(*path_node, state.job_id);
        job.state = std::move(state);
        report.jobs.push_back(std::move(job));
    }
    report.parked = (*shaper)->parked();
    int rc = kExitOk;
    if (!options.prometheus_file.empty()) {
        // node_exporter never reads half a file.
        auto written = write_file_atomically(options.prometheus_file, prometheus_text(report), 0644);
        if (!written) {
            print_error(written.error().message);
            rc = kExitRuntime;
        }
    }
    const auto agent = read_agent_status(context);
    if (options.json) {
        json::Value doc = status_json(report);
        doc["agent"] = agent ? agent_status_json(*agent) : json::Value();
        print_json(doc);
    } else if (options.prometheus_file.empty()) {
        std::string text = format_status_human(report, TableStyle{!options.noheader, options.parsable});
        if (agent && !options.noheader && !options.parsable) {
            const double now =
                std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
            text += format_agent_status(*agent, now);
        }
        print_human(text);
    }
    return rc;
}

}  // namespace lanes::ctl
