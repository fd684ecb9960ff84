// SPDX-License-Identifier: GPL-2.0-or-later
// Facts about this node that spank_lanes, lanesctl and the shaper all need. One
// implementation each, so they cannot disagree:
//   node_name()                 what %n expands to, and which [[nodes.nic]] apply
//   write_file_atomically()     root-owned files that are never seen half-written
//   Slurm's job cgroup          where Slurm's cgroup/v2 plugin put job_<id>
//   decide_liveness()           whether a job's shaping may be removed
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "node/shaping_plan.hpp"

namespace lanes {

// ---- node name -------------------------------------------------------------------

// SLURMD_NODENAME when set (slurmd sets it for the prolog/epilog, slurmstepd has
// it in its own environment), else the short host name (what slurmd uses when it
// is given no -N). Code in a job's environment must not call this.
std::string node_name();
// The host name up to its first dot.
std::string short_host_name();

// ---- files -----------------------------------------------------------------------

// PATH.tmp.PID (O_EXCL|O_NOFOLLOW: never through a file someone else placed),
// written whole, `mode`, fsync (unless `sync` says not to), rename over PATH.
// The tmp file is gone on failure. Either way a reader sees the old content or
// the new, whole; without the fsync, a crash of the machine may lose the write.
enum class FileSync {
    ToDisk,        // survives a power loss
    PageCacheOnly  // only for what does not outlive the boot (state_dir's records)
};
Result<void> write_file_atomically(const std::string& path, std::string_view text, mode_t mode,
                                   FileSync sync = FileSync::ToDisk);

// The current boot's id (/proc/sys/kernel/random/boot_id), "" if unreadable.
std::string current_boot_id();

// ---- Slurm's cgroup v2 tree ------------------------------------------------------

// "slurmstepd.scope" (upstream build) or "<NodeName>_slurmstepd.scope" (built with
// multiple-slurmd support, as Debian does).
bool is_slurmstepd_scope(std::string_view name);

// The job_<id> directory in a cgroup path, if it sits in a stepd scope at any
// depth: "/system.slice/n1_slurmstepd.scope/job_7/step_0/user/task_0" ->
// "/system.slice/n1_slurmstepd.scope/job_7". With `job_id`, only that job's.
std::optional<std::string> slurm_job_dir_of(std::string_view cgroup_path, std::optional<uint32_t> job_id = {});

// Every stepd scope (absolute) under the cgroup2 mount `mount_point`, down to a
// few slices deep.
std::vector<std::string> find_slurmstepd_scopes(const std::string& mount_point);

// Slurm's job_<id> directory (absolute) under the cgroup2 mount `mount_point`,
// if it exists now: every stepd scope found down to a few levels is tried.
std::optional<std::string> find_slurm_job_cgroup(const std::string& mount_point, uint32_t job_id);

// Is Slurm's cgroup/v2 plugin in charge here: does a stepd scope exist under the
// cgroup2 mount at `mount_point`? (slurmd makes it when it starts.)
bool slurm_manages_cgroup_v2(const std::string& mount_point);

// ---- liveness --------------------------------------------------------------------

// "slurmstepd: [123.batch]" -> 123 (argv[0] only; the title is what Slurm sets).
std::optional<uint32_t> stepd_job_id(std::string_view cmdline);

struct JobLiveness {
    bool alive = true;
    std::string why;  // the evidence either way, for logs and lanesctl gc
};

// What slurmctld said about one job (glue/slurm_jobs.cpp asks it).
struct ControllerAnswer {
    enum class Kind {
        Active,       // pending, running, suspended: it may hold this node
        Completing,   // ended, but its epilogs have not all reported yet
        Ended,        // completed, cancelled, failed, timeout, node_fail, ...
        Unknown,      // slurmctld has no such job (purged after MinJobAge)
        Unreachable,  // no answer: slurmctld down, no slurm.conf, timeout, ...
    };
    Kind kind = Kind::Unreachable;
    std::string detail;  // "RUNNING", "CANCELLED", "Invalid job id specified", the error
    bool operator==(const ControllerAnswer&) const = default;
};

// One answer per line, "JOBID KIND DETAIL", so that a child process can hand its
// answers to its parent: format_controller_answer() writes one,
// parse_controller_answers() reads every well-formed line (others are skipped
// and returned in `other_lines`, e.g. what libslurm printed before it died).
std::string format_controller_answer(uint32_t job_id, const ControllerAnswer& answer);
std::map<uint32_t, ControllerAnswer> parse_controller_answers(std::string_view text,
                                                              std::vector<std::string>* other_lines = nullptr);
std::string_view controller_answer_kind_name(ControllerAnswer::Kind kind);

// What this node itself shows about a job.
struct LocalJobEvidence {
    bool earlier_boot = false;  // its state file was written in another boot
    std::string alive;          // evidence of life here ("slurmstepd pid 7"); "" when none
};

// The liveness rule, a pure function. A job's shaping goes only when its end is
// proven: its state is from an earlier boot, or nothing of it runs here and
// slurmctld says it ended (or no longer knows it). Anything uncertain keeps it:
// evidence of life here, a job slurmctld still runs (a salloc allocation with no
// step has no process here), one whose epilogs are still to come, and a
// controller that cannot be asked (`answer` nullopt: not asked at all).
JobLiveness decide_liveness(const LocalJobEvidence& local, const std::optional<ControllerAnswer>& answer);

// Asks slurmctld about the given jobs, all at once; a job missing from the map
// counts as Unreachable. Empty (no function): slurmctld is not asked.
using ControllerProbe = std::function<std::map<uint32_t, ControllerAnswer>(const std::vector<uint32_t>& job_ids)>;

// Gathers the local evidence (a root slurmstepd of the job in this network
// namespace, Slurm's job cgroup, processes in Lanes' own cgroup of the job, the
// boot id) and applies decide_liveness().
class LivenessProbe {
public:
    // Scans /proc once (slurmstepd processes in this network namespace).
    explicit LivenessProbe(ControllerProbe ask_controller = {});
    LocalJobEvidence local(const JobState& state) const;
    // One job (slurmctld asked about it alone, if at all).
    JobLiveness check(const JobState& state) const;
    // Every job; slurmctld is asked once, about the jobs that nothing local decides.
    std::map<uint32_t, JobLiveness> check_all(const std::vector<JobState>& states) const;

private:
    ControllerProbe ask_controller_;
    std::map<uint32_t, long> stepds_;
    std::string boot_id_;
    std::string cgroup2_mount_;
};

}  // namespace lanes
