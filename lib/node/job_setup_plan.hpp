// SPDX-License-Identifier: GPL-2.0-or-later
// The pure half of a job's setup (the prolog, NodeShaper::apply): the decisions
// taken around plan_apply() (shaping_plan.hpp). Which root htb the job's class
// hangs from when node.root_handle changed while jobs run (join the old root
// until it is idle, replace an idle root of ours), where a cgroup the caller
// names lives, what the job's state file records beyond the plan, whether the
// prolog has to run the full converge(), and the lines it logs. NodeShaper
// takes the lock, reads the state and the kernel, claims the minor, runs the
// operations and saves. No I/O here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "core/result.hpp"
#include "node/cgroup_tree.hpp"  // Cgroup2Mount, CgroupPlacement
#include "node/shaping_plan.hpp"

namespace lanes {

// The root a new or re-applied job uses on this node's NICs.
struct JobRoot {
    NodeConfig effective;             // the config plan_apply() plans with
    std::vector<NicFacts> nics;       // the NICs as plan_apply() must see them
    bool replaced_idle_root = false;  // an idle root of ours goes (its warning is not one)
    std::vector<std::string> notes;   // Info lines: what was joined or replaced, and why
};

// `previous_major`: the job's recorded root_major on a re-apply (0 or nullopt:
// none). A NIC whose root is an htb under another major: when a recorded job
// hangs from that major (`root_in_use`), the job joins it (the configured root
// applies once they are gone); otherwise, when .lanes-roots lists it as ours
// (`our_old_root`), it is an idle root of ours and EnsureRoot replaces it.
// `job` starts the notes ("JobId=7").
JobRoot plan_job_root(const NodeConfig& config, const std::string& job, uint16_t previous_major,
                      std::vector<NicFacts> nics, const std::function<bool(uint16_t major)>& root_in_use,
                      const std::function<bool(const std::string& dev, uint16_t major)>& our_old_root);

// A cgroup the caller names (JobNetRequest.cgroup, relative to the cgroup2
// mount: Slurm's job dir): never ours to make or remove. Fails, naming the job,
// for an absolute path or one with "..". Whether it exists is the caller's check.
Result<CgroupPlacement> place_named_cgroup(const Cgroup2Mount& mount, const std::string& cgroup,
                                           const std::string& job);

// The cheap half of converge() in a prolog: other jobs are shaped here but a
// NIC has no root at all (a `tc qdisc del`, a recreated NIC).
bool prolog_finds_root_lost(uint32_t shaped_jobs, bool reapplied, const std::vector<NicFacts>& nics);

// How many times a job's setup (a new job's, or a re-apply of one already
// shaped) is planned and run when the NICs change under it: a `tc qdisc del
// ... root` or a recreated NIC between the read of the kernel and its tc
// operations.
inline constexpr int kSetupAttempts = 3;

// What changed on the NICs between the facts a setup planned with (`planned`)
// and a fresh read (`now`): "NIC eth0: root htb 1a4e:0 is now none", one
// clause per NIC, "; "-joined. Empty when nothing did (the failure was not a
// NIC changing under the plan, and planning again would not help). Only what
// the kernel says counts (device, ifindex, root kind and handle), not what
// plan_job_root() derived from it; a root of ours where the plan saw none is
// the failed attempt's own (its undo leaves the root), not a change.
std::string nics_changed_under_setup(const std::vector<NicFacts>& planned, const std::vector<NicFacts>& now);

// What the state file records: the plan's state, the boot it ran in, the NICs
// not shaped yet (down or of unknown speed) and, in a dir that is not ours, the
// dir's id (`dir_id`, when it exists) and level.
JobState recorded_setup_state(JobState planned, const std::string& boot_id, const std::vector<std::string>& unready,
                              const CgroupPlacement& place, std::optional<uint64_t> dir_id);

// The plan's warnings to log: without the "replacing foreign" one when the
// root replaced is an idle one of ours (JobRoot.replaced_idle_root).
std::vector<std::string> setup_warnings(const Plan& plan, const JobRoot& root);

// Whether the GSO bound has to count the job again (a new job, or a changed one).
bool setup_changes_gso(const std::optional<JobState>& previous, const JobState& state);

// The prolog's Info line once the job is shaped.
std::string setup_done_line(const JobState& state, const std::string& job, bool took_parked, bool cgroup_pending);

}  // namespace lanes
