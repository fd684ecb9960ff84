// SPDX-License-Identifier: GPL-2.0-or-later
// Which job owners are cooling down after one of their jobs made the policy
// overrun its time budget. A job that drives the policy into the kill path
// costs a policy worker (killed, then reloaded off the job's path); without
// a cool-down, one user submitting such jobs back to back keeps every worker
// dead or reloading, and other users' jobs wait for a worker that is not
// there. Pure: the caller passes the time and holds the lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace lanes {

class OverrunCooldown {
public:
    using Clock = std::chrono::steady_clock;

    // A length of zero turns the cool-down off.
    explicit OverrunCooldown(std::chrono::milliseconds length) : length_(length) {}

    // When `uid`'s cool-down ends, if it is cooling down at `now`.
    std::optional<Clock::time_point> until(uint32_t uid, Clock::time_point now) const;

    // A job of `uid` overran at `now`: its cool-down (re)starts. Ended
    // cool-downs are forgotten here, so the map holds only owners whose jobs
    // overran within the last `length`.
    void overran(uint32_t uid, Clock::time_point now);

    size_t cooling() const { return until_.size(); }
    std::chrono::milliseconds length() const { return length_; }

private:
    std::chrono::milliseconds length_;
    std::unordered_map<uint32_t, Clock::time_point> until_;
};

}  // namespace lanes
