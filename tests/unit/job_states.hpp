// SPDX-License-Identifier: GPL-2.0-or-later
// A recorded job for the node planners' tests: its id, the root its class
// hangs from, its minor and the NICs it has a class on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node/shaping_plan.hpp"

namespace lanes::test {

inline JobState job_state(uint32_t job_id, uint16_t major, uint16_t minor, const std::vector<std::string>& devices) {
    JobState st;
    st.job_id = job_id;
    st.root_major = major;
    st.minor = minor;
    for (const auto& d : devices) {
        JobDevice dev;
        dev.device = d;
        st.devices.push_back(std::move(dev));
    }
    return st;
}

}  // namespace lanes::test
