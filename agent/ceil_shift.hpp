// SPDX-License-Identifier: GPL-2.0-or-later
// The node agent's pure half of a ceil shift: which HTB ceil each running job
// of a class with busy_window/busy_ceil should have now, and which of those
// differ from the ceil in force in the job's desired state. The agent
// (agent/main.cpp) feeds it the job state files, the NICs and the windows'
// states, and hands the changes to NodeShaper::set_ceils(), which records them
// in the desired state and applies them under the job's own root major: a
// restarted agent, a reapply or a converge finds the busy ceil there.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "node/node_shaper.hpp"  // CeilChange
#include "node/shaping_plan.hpp"

namespace lanes::agent {

// One job's class on one NIC, as it should be now.
struct CeilTarget {
    uint32_t job_id = 0;
    std::string class_name;
    std::string window;  // the class's busy_window
    bool busy = false;   // the window holds: busy ceil
    std::string device;
    uint64_t ceil_bits = 0;          // the ceil to hold now
    uint64_t normal_ceil_bits = 0;   // the job's own ceil on that NIC
    uint64_t current_ceil_bits = 0;  // the ceil in force in the job's desired state
};

// For every job whose class has a busy_window: its target on every NIC of the
// job. `busy` maps window names to their state (absent: idle). A busy ceil is
// resolved against the NIC's link, never below the job's rate nor above its
// normal ceil.
std::vector<CeilTarget> plan_ceil_targets(const Config& config, const std::vector<JobState>& jobs,
                                          const std::vector<NicFacts>& nics, const std::map<std::string, bool>& busy);

// The targets whose ceil differs from the one in force in the job's desired
// state: what NodeShaper::set_ceils() gets.
std::vector<CeilChange> ceil_changes(const std::vector<CeilTarget>& targets);

}  // namespace lanes::agent
