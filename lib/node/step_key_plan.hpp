// SPDX-License-Identifier: GPL-2.0-or-later
// The pure half of classify_step() (every step's start in slurmstepd): a job
// keyed on Slurm's own job_<id> dir (Slurm's cgroup/v2 plugin runs here) gets
// that dir's id into the nft map once the dir exists; with PrologFlags=Contain
// it does not exist at the prolog. This file decides whether the step has to
// key anything, which of this node's slurmstepd scopes holds the job's dir,
// whether the job is keyed already (later steps: a stat, no nft), and what
// changes when it is not (the old key of a dir Slurm made anew goes, the state
// records the dir, the job's marks are added). NodeShaper stats the dirs, takes
// the lock, runs the marker and saves. No I/O here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "node/cgroup_tree.hpp"  // Cgroup2Mount
#include "node/shaping_plan.hpp"

namespace lanes {

// Whether a step of the job recorded as `state` has anything to key: shaped,
// and on Slurm's dir (Lanes' own dirs are keyed by the prolog).
bool step_needs_key(const JobState& state);

// Slurm's job_<id> dir: under the first of `scopes` (this node's slurmstepd
// scopes, absolute) where it `exists`, else where the scope named after
// `hostname` (several slurmd on one host) or the first scope will make it;
// nullopt when there is no scope (Slurm's cgroup/v2 plugin does not run here).
std::optional<std::string> slurm_job_dir_of(const std::vector<std::string>& scopes,
                                            const std::function<bool(const std::string&)>& exists,
                                            const std::string& hostname, uint32_t job_id);

// The job's marks point at `dir` with inode `id` already.
bool step_keyed(const JobState& state, const std::string& dir, uint64_t id);

// What keys the job on `dir` (inode `id`).
struct StepKey {
    JobState state;                       // with the dir, its key, level and id
    std::optional<NftRemoveJob> old_key;  // the dir was made anew (another inode)
    NftEnsureJob marks;                   // the job's marks on the dir
};
// `major`: the configured root (for states written before root_major was kept).
StepKey plan_step_key(JobState state, const std::string& dir, uint64_t id, const Cgroup2Mount& mount, uint16_t major);

// The messages: the job has no record; Slurm's dir is not there (`looked_for`:
// where it was expected, when a scope exists); the step keyed it.
std::string step_no_record_error(uint32_t job_id);
std::string step_no_slurm_dir_error(uint32_t job_id, const std::optional<std::string>& looked_for);
std::string step_keyed_line(const JobState& state);

}  // namespace lanes
