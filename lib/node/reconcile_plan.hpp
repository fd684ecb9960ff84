// SPDX-License-Identifier: GPL-2.0-or-later
// The pure half of reconcile(alive) (slurmd start, lanesctl gc) and of the
// bookkeeping remove_all() shares with it: once the jobs that ended are torn
// down (job_teardown_plan.hpp), which minor claims have no job behind them any
// more, what the shaped-jobs count really is (a crash may have left it off)
// and whether the parked pool drains. NodeShaper asks the liveness probe, lists
// the claims, runs the teardowns and writes the count. No I/O here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "node/shaping_plan.hpp"

namespace lanes {

// One minor claim in the state dir (minor_<hex> -> job id).
struct MinorClaim {
    uint16_t minor = 0;
    std::optional<uint32_t> owner;  // nullopt: the link does not name a job
    bool owner_recorded = false;    // the owner has a state file
};
// The claims to drop: those whose owner is unknown or has no state file.
std::vector<uint16_t> stale_claims(const std::vector<MinorClaim>& claims);

// The node's shaped jobs as the records left say, against the count kept.
struct ShapedCount {
    uint32_t shaped = 0;      // records with classes
    bool rewrite = false;     // the count kept differs
    bool drain_pool = false;  // no shaped job left: the parked pool goes
};
ShapedCount recount_shaped(const std::vector<JobState>& records, uint32_t kept);

// Several errors or problems in one message, as reconcile(), remove_all(),
// reapply() and open() report them ("a; b").
std::string join_errors(const std::vector<std::string>& errors);

}  // namespace lanes
