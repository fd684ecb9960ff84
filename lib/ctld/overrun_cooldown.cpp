// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/overrun_cooldown.hpp"

namespace lanes {

std::optional<OverrunCooldown::Clock::time_point> OverrunCooldown::until(uint32_t uid, Clock::time_point now) const {
    auto it = until_.find(uid);
    if (it == until_.end() || it->second <= now) return std::nullopt;
    return it->second;
}

void OverrunCooldown::overran(uint32_t uid, Clock::time_point now) {
    if (length_.count() <= 0) return;
    for (auto it = until_.begin(); it != until_.end();) {
        if (it->second <= now) it = until_.erase(it);
        else ++it;
    }
    until_[uid] = now + length_;
}

}  // namespace lanes
