// SPDX-License-Identifier: GPL-2.0-or-later
// What a job's owner may change with `scontrol update` (job_modify), and what
// Lanes does about each change: allow it or refuse it (with the reason and
// what would be allowed). Pure: the job as
// slurmctld holds it comes in as values, read by the glue from the job record
// itself (never from files: job_modify runs under slurmctld's job write lock).
// lanes-policy(7) has the table of every field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/job.hpp"
#include "core/lanes_toml.hpp"

namespace lanes {

class WindowOracle;  // router.hpp
struct RouteOptions;

// The fields of one update that Lanes judges. Fields not here are allowed as
// Slurm allows them (lanes-policy(7) says why for each).
struct OwnerUpdate {
    // The first field the update changes that decides the job's class or routing
    // (partition, QOS, features, ...: routed_field_changed()), for the message.
    std::optional<std::string> routed_field;
    std::optional<int32_t> nice;  // without Slurm's NICE_OFFSET: "Nice=0" is 0
    std::optional<SysSeconds> begin_time;
    bool time_limit_set = false;
    std::optional<uint32_t> time_limit_minutes;  // with time_limit_set: nullopt is UNLIMITED
};

// The job as slurmctld holds it, as far as the checks need it.
struct HeldJob {
    uint32_t job_id = 0;
    std::optional<std::string> class_name;  // LANES_CLASS; nullopt: a job Lanes did not route
    std::optional<int32_t> decided_nice;    // LANES_NICE: the nice Lanes gave it
    // user, account, partition (with any borrowed one), time limit, begin time
    JobView job;
};

struct OwnerVerdict {
    enum class Action { Allow, Refuse };
    // What Slurm is told on refusal (job_modify's return code; Slurm 22.05
    // shows users only its text, 23.02 and later the message too).
    enum class Code { AccessDenied, InvalidTimeLimit };
    Action action = Action::Allow;
    Code code = Code::AccessDenied;
    std::string message;  // for the owner, "lanes: ..."; empty when allowed
};

// `held` null: the job record could not be read (a Slurm release this build
// does not know): every change that needs it is refused, naming why.
// `config` is the one in force; a class no longer in it cannot be checked, so
// a change that needs its rules is refused.
OwnerVerdict judge_owner_update(const OwnerUpdate& update, const HeldJob* held, const Config& config, SysSeconds now,
                                const WindowOracle& windows, const RouteOptions& options);

}  // namespace lanes
