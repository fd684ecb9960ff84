// SPDX-License-Identifier: GPL-2.0-or-later
// The Slurm-struct side of the one job translator (core/job_fields.hpp): copy
// a job_desc_msg_t (job_submit/lanes) or a job_info_t (lanesctl policy test
// --job) into SlurmJobFields, field by field, Slurm's sentinels made nullopt.
// Nothing here decides what a field means.
#pragma once

extern "C" {
#include <slurm/slurm.h>
}

#include <cstdint>

#include "core/job_fields.hpp"

namespace lanes::glue {

// What a submitter asks for (or, in job_modify, what slurmctld holds).
// `submit_uid` is who submitted: desc.user_id (the owner) wins when set.
SlurmJobFields fields_from_desc(const job_desc_msg_t& desc, uint32_t submit_uid);

// What slurmctld reports for a job (slurm_load_job). It carries no job
// environment and no SPANK environment, so the user's --lanes-class/--lanes-cap
// and a batch job's variables are not there; and it is the job after
// job_submit/lanes routed it (partition, QOS, features, begin time rewritten).
SlurmJobFields fields_from_info(const slurm_job_info_t& info);

}  // namespace lanes::glue
