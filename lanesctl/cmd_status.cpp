// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl status: the jobs NodeShaper keeps on this node, with HTB counters;
// optionally node_exporter textfile metrics written atomically.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/lanes_toml.hpp"
#include "lanesctl/commands.hpp"
#include "lanesctl/node_report.hpp"
#include "node/node_facts.hpp"
#include "node/node_shaper.hpp"

namespace lanes::ctl {

// Shared with cmd_gc.cpp: open the node's shaper from lanes.toml, as spank_lanes does.
Result<std::unique_ptr<NodeShaper>> open_node_shaper(const Context& context) {
    if (geteuid() != 0) return fail("must run as root (reads the Lanes state directory and the kernel's tc/nft state)");
    auto config = load_config(context.config_path);
    if (!config) return std::unexpected(config.error());
    LogSink log = [](LogLevel level, const std::string& line) {
        if (level == LogLevel::Error) print_error(line);
    };
    // "%n" in state_dir/cgroup_root is the node name, as in spank_lanes.
    auto node = node_config_for(config->node, context.node);
    if (!node) return std::unexpected(node.error());
    return NodeShaper::open(*node, context.node, log);
}

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
    for (auto& state : (*shaper)->list()) {
        JobStatus job;
        auto counters = (*shaper)->counters(state.job_id);
        if (counters) job.counters = std::move(*counters);
        else job.error = counters.error().message;
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
    if (options.json) {
        print_json(status_json(report));
    } else if (options.prometheus_file.empty()) {
        std::string text = format_status_human(report, TableStyle{!options.noheader, options.parsable});
        print_human(text);
    }
    return rc;
}

}  // namespace lanes::ctl
