// SPDX-License-Identifier: GPL-2.0-or-later
// The pure half of a job's teardown (the epilog, NodeShaper::remove, and every
// job reconcile() or remove_all() reclaims): how many shaped jobs are left,
// whether the class may go to the parked pool (pool_plan.hpp decides whether
// it fits) or is deleted (plan_remove()), whether the pool drains, which root
// htb of an older node.root_handle is idle now, and the lines it logs.
// NodeShaper takes the lock, reads the state, runs the operations and erases
// the state file. No I/O here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node/shaping_plan.hpp"

namespace lanes {

// What the end of one recorded job changes on the node.
struct JobTeardown {
    bool shaped = false;       // the job had classes (it counts in the shaped jobs)
    uint32_t shaped_left = 0;  // the node's shaped jobs once it is gone
    bool may_park = false;     // other jobs run on: its class may be parked
    bool drain_pool = false;   // the node's last shaped job: the parked pool goes
    Plan removal;              // what deletes it when it is not parked
};
// `shaped_jobs`: the node's count before (JobStateStore::shaped_jobs()).
// `major`: the configured root (for states written before root_major was kept).
JobTeardown plan_teardown(const JobState& state, uint32_t shaped_jobs, uint16_t major);

// Whether `state` hangs from a root other than the configured `major` (only
// then are the other jobs read for idle_old_roots()).
bool hangs_from_old_root(const JobState& state, uint16_t major);
// The roots of `state`'s older major (node.root_handle changed while it ran)
// that no job left in `rest` uses on the same NIC: deleted once it is gone, so
// the next prolog does not see them as foreign. None when the job hangs from
// the configured root `major`.
std::vector<DeleteRoot> idle_old_roots(const JobState& state, uint16_t major, const std::vector<JobState>& rest);
std::string old_root_removed_line(const DeleteRoot& root);

// The epilog's Info line ("JobId=7: shaping removed", and where its class went).
std::string teardown_done_line(const JobState& state, bool parked);

}  // namespace lanes
