// SPDX-License-Identifier: GPL-2.0-or-later
// The pure half of a job found under another state dir: node.state_dir changed
// between the job's prolog and its epilog (lanes.toml edited meanwhile), so the
// epilog finds no state in its own dir. The dirs Lanes used since boot are in
// .lanes-state-dirs (state_registry.hpp: other_state_dirs() lists them in
// order); the first that holds the job's state has what its teardown needs.
// This file says what to do with what is found there: the removal from that state (never parked: the
// pool belongs to the new dir), then its record and minor claim go from that
// dir. NodeShaper reads the registry and the dirs and runs it. No I/O here.
#pragma once

#include <cstdint>
#include <string>

#include "node/shaping_plan.hpp"

namespace lanes {

// The teardown of a job whose state was found in `dir`.
struct MigratedTeardown {
    std::string dir;     // where its record and minor claim are erased
    JobState state;      // what the record said
    Plan removal;        // every object of the job (plan_remove)
    std::string failed;  // the error's prefix when the removal fails ("JobId=7: remove: ")
    std::string done;    // the Info line once it is gone
};
// `major`: the configured root (for states written before root_major was kept).
MigratedTeardown plan_migrated_teardown(uint32_t job_id, const std::string& dir, const JobState& state, uint16_t major);

}  // namespace lanes
