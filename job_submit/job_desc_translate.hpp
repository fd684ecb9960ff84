// SPDX-License-Identifier: GPL-2.0-or-later
// Translation between Slurm's job_desc_msg_t and Lanes' JobView / Decision.
// The only place in job_submit/ that reads or writes Slurm's job fields.
#pragma once

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include <cstdint>
#include <optional>
#include <string>

#include "core/job.hpp"
#include "ctld/user_names.hpp"

namespace lanes {

// Build the classifier's view through the one translator (core/job_fields.hpp,
// glue/slurm_job_fields.hpp). `submit_uid` is who submitted (may be an admin
// submitting for another user: job_desc->user_id then names the owner).
JobView job_view_from_desc(const job_desc_msg_t& desc, uint32_t submit_uid, UserNames& names, SysSeconds now);

// Write the routing fields of an accepted decision into the job, replace every
// LANES_* entry of spank_job_env with the decision's entries, and return the
// user-visible message lines joined by newlines (may be empty). Strings are
// allocated with Slurm's allocator (slurm_xstrdup) and old ones freed.
std::string apply_decision_to_desc(job_desc_msg_t& desc, const Decision& decision);

// Remove all LANES_* / SPANK_LANES_* entries of spank_job_env (keeps order of the rest).
void strip_lanes_env(job_desc_msg_t& desc);

// For an update (scontrol update job=...): the first field it changes that users
// may not change, because routing depends on it or the classifier reads it
// (partition, QOS, features, reservation, SPANK env, name, comment, account,
// GRES/TRES, node and task counts), or nullopt. Re-classifying the job would
// need all it was classified on (a batch job's environment is a file), so any
// change of these is refused for users. Nice, StartTime and TimeLimit are
// judged against the job's class (ctld/owner_update.hpp); hold, release and
// the like stay allowed.
std::optional<std::string> routed_field_changed(const job_desc_msg_t& update);

// The ESLURM_* code for a rejected decision.
int reject_code(const Decision& decision);

// count_gpus() is in core/job.hpp, requested_gpus() in core/job_fields.hpp.

}  // namespace lanes
