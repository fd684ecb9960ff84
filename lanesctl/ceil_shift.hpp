// SPDX-License-Identifier: GPL-2.0-or-later
// The node agent's pure half: which HTB ceil each running job of a class with
// busy_window/busy_ceil should have now, and what to change to get there. The
// agent (cmd_agent.cpp) feeds it the job state files, the NICs and the windows'
// states, and hands the changes to NodeShaper::set_ceils(), which records the
// ceil in each job's desired state and applies it (so a reapply or converge
// keeps a busy ceil, and the agent compares with the desired state, not a cache).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/lanes_toml.hpp"
#include "node/node_shaper.hpp"  // CeilChange
#include "node/shaping_plan.hpp"

namespace lanes::ctl {

// One job's class on one NIC, as it should be now.
struct CeilTarget {
    uint32_t job_id = 0;
    std::string class_name;
    std::string window;  // the class's busy_window
    bool busy = false;   // the window holds: busy ceil
    AddClass change;     // the whole class, ceil included, under the job's own root major
    uint64_t normal_ceil_bits = 0;
    uint64_t current_ceil_bits = 0;  // the ceil in force in the job's desired state
};

// For every job whose class has a busy_window: its target on every NIC of the
// job. `busy` maps window names to their state (absent: idle). A busy ceil is
// resolved against the NIC's link, never below the job's rate nor above its
// normal ceil. Handles use each job's own root major (JobState.root_major);
// `root_major` (the configured one) only for a state that does not say.
std::vector<CeilTarget> plan_ceil_targets(const Config& config, const std::vector<JobState>& jobs,
                                          const std::vector<NicFacts>& nics, const std::map<std::string, bool>& busy,
                                          uint16_t root_major);

// The targets whose ceil differs from the one in force in the job's desired
// state: what NodeShaper::set_ceils() gets.
std::vector<CeilChange> ceil_changes(const std::vector<CeilTarget>& targets);

// What the agent last set, per (job, device): the ceil in bits/s.
using AppliedCeils = std::map<std::pair<uint32_t, std::string>, uint64_t>;

// The targets that need a netlink change: those whose ceil differs from what was
// applied; a job not applied yet needs one only when busy, or when `assume_unknown`
// (the agent's first pass: a previous agent may have left a busy ceil).
std::vector<CeilTarget> changes_needed(const std::vector<CeilTarget>& targets, const AppliedCeils& applied,
                                       bool assume_unknown);

}  // namespace lanes::ctl
