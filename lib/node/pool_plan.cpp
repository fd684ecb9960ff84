// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/pool_plan.hpp"

#include <algorithm>

namespace lanes {

bool parkable(const NodeConfig& config, const JobState& state) {
    return config.parked_classes != 0 && !state.devices.empty() && state.root_major == config.root_handle_major;
}

bool pool_has_room(const NodeConfig& config, std::size_t parked_now) { return parked_now < config.parked_classes; }

ParkedClass parked_record_of(const JobState& state) {
    ParkedClass p{state.minor, state.root_major, {}};
    for (const auto& dev : state.devices) p.devices.push_back(dev.device);
    std::sort(p.devices.begin(), p.devices.end());
    return p;
}

std::vector<ParkedClass> takeover_candidates(const std::vector<ParkedClass>& pool, uint16_t major,
                                             std::vector<std::string> devices) {
    std::sort(devices.begin(), devices.end());
    std::vector<ParkedClass> out;
    for (const auto& p : pool)
        if (p.root_major == major && p.devices == devices && p.minor != major) out.push_back(p);
    return out;
}

std::vector<DeleteClass> plan_drain(const std::vector<ParkedClass>& pool) {
    std::vector<DeleteClass> out;
    for (const auto& p : pool)
        for (const auto& dev : p.devices) out.push_back(DeleteClass{dev, 0, tc_handle(p.root_major, p.minor)});
    return out;
}

}  // namespace lanes
