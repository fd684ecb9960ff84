// lanesctl status: the jobs NodeShaper keeps on this node, with HTB counters;
// optionally node_exporter textfile metrics written atomically.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lanesctl/commands.hpp"
#include "core/lanes_toml.hpp"
#include "lanesctl/node_report.hpp"
#include "node/node_shaper.hpp"

namespace lanes::ctl {

namespace {

// FILE.tmp.PID, fsync, 0644, rename: node_exporter never reads half a file.
Result<void> write_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    // O_EXCL|O_NOFOLLOW: never write through a file or link someone else placed.
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return fail(tmp + ": cannot create: " + std::strerror(errno));
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            std::string why = std::strerror(errno);
            ::close(fd);
            ::unlink(tmp.c_str());
            return fail(tmp + ": cannot write: " + why);
        }
        done += static_cast<size_t>(n);
    }
    if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0 || ::close(fd) != 0) {
        std::string why = std::strerror(errno);
        ::unlink(tmp.c_str());
        return fail(tmp + ": " + why);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string why = std::strerror(errno);
        ::unlink(tmp.c_str());
        return fail(path + ": cannot rename " + tmp + " to it: " + why);
    }
    return {};
}

}  // namespace

// Shared with cmd_gc.cpp: open the node's shaper from lanes.toml, as spank_lanes does.
Result<std::unique_ptr<NodeShaper>> open_node_shaper(const Context& context) {
    if (geteuid() != 0) return fail("must run as root (reads the Lanes state directory and the kernel's tc/nft state)");
    auto config = load_config(context.config_path);
    if (!config) return std::unexpected(config.error());
    LogSink log = [](LogLevel level, const std::string& line) {
        if (level == LogLevel::Error) std::fprintf(stderr, "lanesctl: %s\n", line.c_str());
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
    int rc = kExitOk;
    if (!options.prometheus_file.empty()) {
        auto written = write_atomically(options.prometheus_file, prometheus_text(report));
        if (!written) {
            print_error(written.error().message);
            rc = kExitRuntime;
        }
    }
    if (options.json) {
        print_json(status_json(report));
    } else if (options.prometheus_file.empty()) {
        std::string text = format_status_human(report, TableStyle{!options.noheader, options.parsable});
        std::fputs(text.c_str(), stdout);
    }
    return rc;
}

}  // namespace lanes::ctl
