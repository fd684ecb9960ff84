// SPDX-License-Identifier: GPL-2.0-or-later
// A path per class, the kernel side (the plan is path_plan.hpp): resolves a
// class's table, device or VLAN on this node, and keeps the `ip rule`s, the
// routes of Lanes' own tables and the `inet lanes_paths` map elements in step
// with the jobs on paths (rtnetlink on a NetlinkSocket, libnftables).
//
// Desired state: one record per job on a path, state_dir/paths/job_<id>
// (path_plan.hpp PathJob), written before the kernel objects are made and removed
// after. Every change (attach, detach, converge) takes flock(state_dir/paths/lock),
// reads every record, compares the kernel with what they want and repairs the
// difference: a class's rules are made with its first job and go with its last,
// a deleted rule or route is put back by the next converge. A record lives no
// longer than the job's state file (state_dir/job_<id>): once slurmd's start-up
// reconcile or lanesctl gc removed that, the next converge drops the path too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "core/log.hpp"
#include "core/result.hpp"
#include "node/path_plan.hpp"

namespace lanes {

class PathRouter {
public:
    // Opens the netlink socket; makes state_dir/paths.
    static Result<std::unique_ptr<PathRouter>> open(const NodeConfig& node, LogSink log = {});
    ~PathRouter();
    PathRouter(const PathRouter&) = delete;
    PathRouter& operator=(const PathRouter&) = delete;

    // The class's path here: its table (rt_tables name resolved, the table must
    // have routes), or its device / VLAN (must exist, be a VLAN of that id on that
    // NIC, and have an address). Fails with the key and what is missing.
    Result<ResolvedPath> resolve(const ClassConfig& c);

    // A job on a path: record, then the kernel objects. On failure the record is
    // gone again and what this call added is removed (nothing half-applied).
    Result<void> attach(uint32_t job_id, uint32_t priority, const ResolvedPath& path);
    // Absent = success. The class's rules and routes go with its last job.
    Result<void> detach(uint32_t job_id);
    // The job's path, if it is on one.
    std::optional<PathJob> job(uint32_t job_id) const;
    std::vector<PathJob> jobs() const;
    // Compare the kernel with the records and repair (dry_run: report only). Each
    // line names what was (or would be) added or deleted. Records of jobs for which
    // `alive` is false are dropped first (lanesctl gc).
    Result<std::vector<std::string>> converge(bool dry_run, const std::function<bool(uint32_t)>& alive = {});

private:
    struct Impl;
    explicit PathRouter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Whether any class names a path (a node without any never opens a PathRouter).
bool config_has_paths(const Config& config);

// The prolog's steps (spank_lanes, and tests/net's shaper_tool), around
// NodeShaper::apply(): prepare before anything is shaped, attach once the job's
// nft element (its priority) exists, detach in the epilog.
struct JobPath {
    std::unique_ptr<PathRouter> router;  // null: nothing to attach
    ResolvedPath path;
    std::string warning;  // set when the path is missing and classify_failure = "warn"
};
// Fails (the launch must fail) when the class's table, device or VLAN is missing
// here, unless node.classify_failure_warns: then no router and `warning` says why.
// No router either when [[nodes.nic]] puts the class's device on other nodes
// only (path_declared_on): the job takes the default path here.
Result<JobPath> prepare_job_path(const Config& config, const NodeConfig& node, const std::string& hostname,
                                 const std::string& class_name, LogSink log = {});
// priority: the job's M:<minor> (JobState root_major, minor).
Result<void> attach_job_path(JobPath& step, uint32_t job_id, uint32_t priority);
// Absent = success; opens a router only when the job has a path record.
Result<void> detach_job_path(const NodeConfig& node, uint32_t job_id, LogSink log = {});
// The reconcilers' step (lanes-agent, lanesctl reconcile, lanesctl gc): converge
// the paths of this node when any job ever took one here (state_dir/paths
// exists); else nothing is opened and nothing is returned. `alive`: see
// PathRouter::converge; `all_gone` drops every record (lanesctl gc --all).
Result<std::vector<std::string>> converge_node_paths(const NodeConfig& node, bool dry_run,
                                                     const std::function<bool(uint32_t)>& alive = {}, LogSink log = {});
// The job's path here, if it has one (lanesctl status; no netlink).
std::optional<PathJob> job_path(const NodeConfig& node, uint32_t job_id);

}  // namespace lanes
