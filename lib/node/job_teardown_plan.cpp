// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/job_teardown_plan.hpp"

#include <algorithm>

#include "node/packet_marker.hpp"  // nft_priority

namespace lanes {

JobTeardown plan_teardown(const JobState& state, uint32_t shaped_jobs, uint16_t major) {
    JobTeardown out;
    out.shaped = !state.devices.empty();
    out.shaped_left = out.shaped ? std::max(shaped_jobs, 1u) - 1 : shaped_jobs;
    out.may_park = out.shaped_left > 0;
    out.drain_pool = out.shaped_left == 0;
    out.removal = plan_remove(state, major);
    return out;
}

bool hangs_from_old_root(const JobState& state, uint16_t major) {
    return state.root_major != 0 && state.root_major != major;
}

std::vector<DeleteRoot> idle_old_roots(const JobState& state, uint16_t major, const std::vector<JobState>& rest) {
    std::vector<DeleteRoot> out;
    if (!hangs_from_old_root(state, major)) return out;
    for (const auto& dev : state.devices) {
        bool used = std::any_of(rest.begin(), rest.end(), [&](const JobState& o) {
            return o.root_major == state.root_major &&
                   std::any_of(o.devices.begin(), o.devices.end(),
                               [&](const JobDevice& d) { return d.device == dev.device; });
        });
        if (!used) out.push_back(DeleteRoot{dev.device, 0, state.root_major});
    }
    return out;
}

std::string old_root_removed_line(const DeleteRoot& root) {
    return "NIC " + root.device + ": removed the old root htb " + nft_priority(tc_handle(root.major, 0)) +
           " (node.root_handle changed)";
}

std::string teardown_done_line(const JobState& state, bool parked) {
    return "JobId=" + std::to_string(state.job_id) + ": shaping removed" +
           (parked ? " (class " + nft_priority(tc_handle(state.root_major, state.minor)) + " parked for the next job)"
                   : "");
}

}  // namespace lanes
