// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/reconcile_plan.hpp"

namespace lanes {

std::vector<uint16_t> stale_claims(const std::vector<MinorClaim>& claims) {
    std::vector<uint16_t> out;
    for (const auto& c : claims)
        if (!c.owner || !c.owner_recorded) out.push_back(c.minor);
    return out;
}

ShapedCount recount_shaped(const std::vector<JobState>& records, uint32_t kept) {
    ShapedCount out;
    for (const auto& st : records)
        if (!st.devices.empty()) ++out.shaped;
    out.rewrite = out.shaped != kept;
    out.drain_pool = out.shaped == 0;
    return out;
}

std::string join_errors(const std::vector<std::string>& errors) {
    std::string out;
    for (const auto& e : errors) out += (out.empty() ? "" : "; ") + e;
    return out;
}

}  // namespace lanes
