// SPDX-License-Identifier: GPL-2.0-or-later
// See ceil_shift.hpp.
#include "agent/ceil_shift.hpp"

#include <algorithm>

namespace lanes::agent {

std::vector<CeilTarget> plan_ceil_targets(const Config& config, const std::vector<JobState>& jobs,
                                          const std::vector<NicFacts>& nics, const std::map<std::string, bool>& busy) {
    std::vector<CeilTarget> out;
    for (const auto& job : jobs) {
        const ClassConfig* cls = config.find_class(job.class_name);
        if (!cls || cls->busy_window.empty() || !cls->busy_ceil || !job.unshaped.empty()) continue;
        auto it = busy.find(cls->busy_window);
        const bool is_busy = it != busy.end() && it->second;
        for (const auto& dev : job.devices) {
            auto nic =
                std::find_if(nics.begin(), nics.end(), [&](const NicFacts& n) { return n.device == dev.device; });
            if (nic == nics.end()) continue;  // NIC no longer selected: nothing of ours to shift there
            uint64_t ceil = dev.ceil_bits;
            if (is_busy) {
                ceil = cls->busy_ceil->resolve(nic->link_speed_bits);
                ceil = std::min(ceil, dev.ceil_bits);
                ceil = std::max(ceil, dev.rate_bits);
            }
            CeilTarget t;
            t.job_id = job.job_id;
            t.class_name = job.class_name;
            t.window = cls->busy_window;
            t.busy = is_busy;
            t.device = dev.device;
            t.ceil_bits = ceil;
            t.normal_ceil_bits = dev.ceil_bits;
            t.current_ceil_bits = dev.ceil_in_force();
            out.push_back(std::move(t));
        }
    }
    return out;
}

std::vector<CeilChange> ceil_changes(const std::vector<CeilTarget>& targets) {
    std::vector<CeilChange> out;
    for (const auto& t : targets)
        if (t.ceil_bits != t.current_ceil_bits) out.push_back(CeilChange{t.job_id, t.device, t.ceil_bits});
    return out;
}

}  // namespace lanes::agent
