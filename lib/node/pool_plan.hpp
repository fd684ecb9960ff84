// SPDX-License-Identifier: GPL-2.0-or-later
// The pure half of the parked pool (ParkedClass, node.parked_classes): at a
// job's end its class is parked instead of deleted while other jobs still run
// and the pool has room; a new job on the same NICs takes one over; the pool is
// drained when the node's last shaped job ends. These functions decide which
// (whether to park, which records may be taken over, what a drain deletes);
// NodeShaper reads the records (JobStateStore), claims minors and runs the
// operations. No I/O here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "node/shaping_plan.hpp"  // ParkedClass, DeleteClass

namespace lanes {

// Whether `state`'s class may be parked at all: the pool is on, the job has
// classes, under the node's root (checked before the pool is counted).
bool parkable(const NodeConfig& config, const JobState& state);
// Whether a pool of `parked_now` records takes one more.
bool pool_has_room(const NodeConfig& config, std::size_t parked_now);

// The record a parked `state` leaves (its devices sorted, as take-over compares them).
ParkedClass parked_record_of(const JobState& state);

// The parked records a new job under `major` on `devices` (this node's NICs, any
// order) may take over, in the order tried: same root, exactly these NICs, and
// never the root's own minor.
std::vector<ParkedClass> takeover_candidates(const std::vector<ParkedClass>& pool, uint16_t major,
                                             std::vector<std::string> devices);

// What a drain deletes: every parked class on each of its NICs.
std::vector<DeleteClass> plan_drain(const std::vector<ParkedClass>& pool);

}  // namespace lanes
