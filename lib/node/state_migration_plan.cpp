// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/state_migration_plan.hpp"

namespace lanes {

MigratedTeardown plan_migrated_teardown(uint32_t job_id, const std::string& dir, const JobState& state,
                                        uint16_t major) {
    MigratedTeardown out;
    out.dir = dir;
    out.state = state;
    out.removal = plan_remove(state, major);
    const std::string job = "JobId=" + std::to_string(job_id);
    out.failed = job + ": remove: ";
    out.done = job + ": shaping removed (state was in " + dir + ", the state_dir at its prolog)";
    return out;
}

}  // namespace lanes
