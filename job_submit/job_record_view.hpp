// SPDX-License-Identifier: GPL-2.0-or-later
// The job as slurmctld holds it, read from the job record job_modify() is
// given, for the owner-update checks (ctld/owner_update.hpp). No file is read:
// job_modify() runs under slurmctld's job write lock, where
// copy_job_record_to_job_desc() would read the job's environment and script
// from StateSaveLocation.
//
// slurmctld's job record (job_record_t) is private to slurmctld (not in
// libslurm-dev) and its layout changes between Slurm releases, micro releases
// included. The offsets of the few fields read here are measured per release
// from Slurm's own headers (contrib/job-record-offsets.sh writes
// glue/job_record_layout.inc) and checked on every read against the record's
// and its details' magic values; a release without a measured layout reads
// nothing, and the checks that need the record refuse (fail closed).
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "ctld/owner_update.hpp"
#include "ctld/user_names.hpp"

namespace lanes {

// Byte offsets in job_record_t and its job details, for one Slurm release.
struct JobRecordLayout {
    uint32_t slurm_version;  // SLURM_VERSION_NUMBER: 0xMMmmuu
    uint16_t magic, job_id, user_id, time_limit, partition, account, spank_job_env, spank_job_env_size, details;
    uint16_t details_magic, details_begin_time, details_nice;
};

// The measured layout of Slurm release `slurm_version`, or null.
const JobRecordLayout* job_record_layout(uint32_t slurm_version);

// The fields as slurmctld keeps them (Slurm's units and sentinels).
struct JobRecordValues {
    uint32_t job_id = 0;
    uint32_t user_id = 0;
    uint32_t time_limit = 0;  // minutes; NO_VAL or INFINITE
    std::string partition;    // "a,b" for a job eligible for several
    std::string account;
    std::vector<std::string> spank_job_env;
    time_t begin_time = 0;
    uint32_t nice = 0;  // with NICE_OFFSET
};

// Reads `job_ptr` (a job_record_t* from slurmctld, under its job lock) with
// `layout`; an error when the magic values do not match (the layout is not this
// slurmctld's) or a field is implausible.
Result<JobRecordValues> read_job_record(const void* job_ptr, const JobRecordLayout& layout);

// The record's values as the owner-update checks see them: the class and nice
// Lanes decided (LANES_CLASS, LANES_NICE in spank_job_env), the user's name,
// and Slurm's sentinels as "unset".
HeldJob held_job_from_record(const JobRecordValues& record, UserNames& names);

}  // namespace lanes
