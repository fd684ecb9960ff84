// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/step_key_plan.hpp"

#include "node/packet_marker.hpp"  // cgroup_level

namespace lanes {

bool step_needs_key(const JobState& state) { return state.unshaped.empty() && state.cgroup_slurm; }

std::optional<std::string> slurm_job_dir_of(const std::vector<std::string>& scopes,
                                            const std::function<bool(const std::string&)>& exists,
                                            const std::string& hostname, uint32_t job_id) {
    const std::string job = "/job_" + std::to_string(job_id);
    for (const auto& scope : scopes)
        if (exists(scope + job)) return scope + job;
    if (scopes.empty()) return std::nullopt;
    // Several slurmd on one host (or an old scope left behind): the scope named
    // after this node.
    for (const auto& scope : scopes)
        if (scope.ends_with("/" + hostname + "_slurmstepd.scope")) return scope + job;
    return scopes.front() + job;
}

bool step_keyed(const JobState& state, const std::string& dir, uint64_t id) {
    return state.cgroup_id == id && state.cgroup == dir;
}

StepKey plan_step_key(JobState state, const std::string& dir, uint64_t id, const Cgroup2Mount& mount, uint16_t major) {
    StepKey out;
    if (state.root_major == 0) state.root_major = major;
    if (state.cgroup_id != 0 && state.cgroup_id != id)
        out.old_key = NftRemoveJob{state.job_id, state.cgroup_id, state.dscp_marked};
    state.cgroup = dir;
    state.cgroup_key = relative_path(dir, mount.mount_point);
    state.cgroup_level = cgroup_level(mount, state.cgroup_key);
    state.cgroup_id = id;
    out.marks = nft_job_of(state);
    out.state = std::move(state);
    return out;
}

std::string step_no_record_error(uint32_t job_id) {
    return "JobId=" + std::to_string(job_id) +
           ": no Lanes record on this node (the prolog did not run, or its record was removed)";
}

std::string step_no_slurm_dir_error(uint32_t job_id, const std::optional<std::string>& looked_for) {
    return "JobId=" + std::to_string(job_id) + ": Slurm's job cgroup job_" + std::to_string(job_id) +
           " not found under any slurmstepd scope" + (looked_for ? " (looked for " + *looked_for + ")" : "");
}

std::string step_keyed_line(const JobState& state) {
    return "JobId=" + std::to_string(state.job_id) + ": traffic keyed on Slurm's cgroup " + state.cgroup_key +
           " (cgroup id " + std::to_string(state.cgroup_id) + ", level " + std::to_string(state.cgroup_level) + ")";
}

}  // namespace lanes
