// SPDX-License-Identifier: GPL-2.0-or-later
// Node-side shaping: one job's class -> HTB leaf classes on the selected NICs,
// nftables priority + DSCP marks for the job's cgroup, and a cgroup2 dir for its
// tasks. Layout and rules: shaping_plan.hpp. Kernel access: traffic_control.hpp
// (libnl), packet_marker.hpp (libnftables), cgroup_tree.hpp (cgroup2 files).
//
// Who calls what (all as root, in the node's network namespace):
//   slurm_spank_job_prolog            open() + apply()   (decision from SPANK_ env);
//                                     record_unshaped() when nothing is shaped here
//   slurm_spank_init (slurmstepd,     classify_step(): on a Slurm cgroup v2 node,
//     every step, extern first)       adds Slurm's job_<id> dir to the nft map/sets
//                                     (once per job; later steps only stat the dir)
//   slurm_spank_task_init_privileged  NodeShaper::attach_task(config, job, getpid())
//                                     in the forked task, before exec: no netlink,
//                                     no nft, reads the job's state file only.
//   slurm_spank_job_epilog            open() + remove()  (absent job = success): the
//                                     job's class is parked for the next job while
//                                     other jobs run (node.parked_classes), else deleted
//   slurmd start / lanesctl gc        reconcile(alive)   lanesctl gc --all: remove_all()
//   lanes-agent (on a netlink event), converge()         (the one reconciler: every
//     lanesctl reconcile / reapply                       job's desired state against
//     (lanes-reconcile.timer)                            the kernel, repairs the drift)
//   lanes-agent (signal windows)      set_ceils()        (a busy_ceil shift: recorded
//                                                        in the job's desired state)
//   every prolog / epilog             the cheap part of converge(): a missing nft
//                                     table or root qdisc of ours found while
//                                     applying/removing runs the full converge()
//   lanesctl status                   list() + counters()
//
// One desired state, one writer: the job's state file (JobState) is everything
// the kernel should show for the job: its class on every selected NIC (NICs down
// at its prolog in pending_devices until they come up), the ceil in force
// (JobDevice.ceil_now_bits with JobState.ceil_cause while a signal's shift holds),
// its nft elements (cgroup_id, dscp_marked, root_major:minor) and, from its
// ceils, the NIC's GSO bound (gso_<dev>). Every writer changes that state and runs
// the executor below under flock(state_dir/lock); nothing outside lib/node
// writes tc or nftables.
//
// Layout: NodeShaper::Impl (node_shaper.cpp) coordinates: it takes the lock,
// loads the state, asks a pure planner what to change and runs the operations
// through the executor (TrafficControl, PacketMarker, CgroupTree), then saves.
// The planners, each unit-tested on its own without a kernel:
//   shaping_plan.hpp      a job's classes, leaves, cgroup and marks (prolog,
//                         epilog, park), the minor allocation
//   converge_plan.hpp     desired vs observed state -> the repairs (converge())
//   pool_plan.hpp         the parked pool: whether to park, which parked class a
//                         new job takes over, what a drain deletes
//   burst_bound_plan.hpp  the GSO/TSO burst bound (node.gso_burst): the gso_<dev>
//                         file, the size per lowest capped ceil, its repair
//   state_registry.hpp    .lanes-state-dirs, .lanes-roots and the minor claim names
//   job_setup_plan.hpp    the prolog around plan_apply(): the root after a
//                         root_handle change, a named cgroup, what is recorded
//   job_teardown_plan.hpp the epilog: shaped jobs left, park or delete, the
//                         drain, idle roots of an older root_handle
//   state_migration_plan.hpp  a job whose state is in another state_dir
//   step_key_plan.hpp     classify_step(): Slurm's job dir and its nft key
//   reconcile_plan.hpp    reconcile()'s bookkeeping: stale minor claims, the
//                         shaped-jobs count, the drain
//
// Concurrency: apply/remove/reconcile/remove_all/classify_step hold
// flock(state_dir/lock) while they change things, so prologs, steps and epilogs
// of concurrent jobs on the node (separate processes) serialise. One NodeShaper
// is not thread-safe beyond that (use one per thread, or a mutex).
//
// Cgroup placement (NodeConfig.cgroup_root):
//   "auto": if /sys/fs/cgroup is cgroup2 and a slurmstepd scope exists under it
//           (`slurmstepd.scope` or `<NodeName>_slurmstepd.scope`, any depth: Slurm's
//           cgroup/v2 plugin runs here), Slurm's job dir <scope>/job_<id>, where it
//           is or where slurmstepd will make it (PrologFlags=Contain makes it after
//           the prolog): not owned (attach is a no-op, remove leaves it), keyed in
//           nft by classify_step() once it exists. Otherwise Lanes' own dir
//           <cgroup2 mount>/lanes/job_<id> (on a hybrid node:
//           /sys/fs/cgroup/unified/lanes/job_<id>).
//   a path: Lanes' own dirs under that cgroup2 directory (<path>/job_<id>).
// Only sockets created after a task entered the cgroup carry the job's marks:
// attach before exec.
//
// State: state_dir (0700) holds job_<id> files (0600, small key=value text), the
// minor claims (minor_<hex> -> job id symlinks), the parked pool (parked/<hex>) and
// the lock file. The state file is
// written before the kernel objects are made and removed after they are gone, so a
// crash leaves at worst a state file whose objects are partly missing: remove() and
// reconcile() clean those, since removing an absent object is success.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "core/log.hpp"
#include "core/result.hpp"
#include "node/converge_plan.hpp"  // Repair
#include "node/shaping_plan.hpp"
#include "node/traffic_control.hpp"  // ClassCounters

namespace lanes {

// ---- the reconciler's API (lanes-agent, lanesctl reconcile, the timer) -----------
//
// What converge() did (or, dry run, would do). Repair (converge_plan.hpp) names
// the object ("root_qdisc", "class", "leaf_qdisc", "nft_table", "nft_element",
// "gso_max_size", "pending_nic"), the cause ("missing", "changed", "link_up"),
// the job (0: the node's) and the device.
struct ConvergeReport {
    std::vector<Repair> repairs;        // empty: the kernel matched every job's desired state
    std::size_t jobs = 0;               // jobs with state files
    std::vector<std::string> problems;  // what could not be repaired (and why), NIC selection problems
    std::vector<std::string> nics;      // the NICs selected now (re-selected by this call)
};

// A signal's ceil shift of one running job on one NIC (lanes-agent).
struct CeilChange {
    uint32_t job_id = 0;
    std::string device;
    uint64_t ceil_bits = 0;  // the ceil to hold; the job's own ceil there = the shift ends
};
// What set_ceils() did with one change.
struct CeilSet {
    uint32_t job_id = 0;
    std::string device;
    uint64_t from_bits = 0;  // the ceil in force before
    uint64_t to_bits = 0;    // the ceil in force now (clamped to [rate, own ceil])
    std::string error;       // "" = done; else why not (job gone, NIC not the job's, netlink)
};

class PacketMarker;
class CgroupTree;
struct Cgroup2Mount;

class NodeShaper {
public:
    // Real kernel: selects the NICs of `hostname` (NicSelector.nodes) now, opens the
    // netlink socket and the nft context once, probes whether fq_codel exists, creates
    // state_dir. Fails with a precise message (no NIC selected, unreadable cgroup2
    // mount, ...).
    static Result<std::unique_ptr<NodeShaper>> open(const NodeConfig& config, const std::string& hostname,
                                                    LogSink log = {});
    // With injected kernel interfaces (unit tests with recording fakes).
    static Result<std::unique_ptr<NodeShaper>> open_with(const NodeConfig& config, const std::string& hostname,
                                                         std::unique_ptr<TrafficControl> tc,
                                                         std::unique_ptr<PacketMarker> marker,
                                                         std::unique_ptr<CgroupTree> cgroups, LogSink log = {});
    ~NodeShaper();
    NodeShaper(const NodeShaper&) = delete;
    NodeShaper& operator=(const NodeShaper&) = delete;

    // Prolog. Idempotent: the same request again is a no-op; a changed request
    // updates the classes and marks in place (same minor). A failure part-way
    // removes what this call created.
    Result<JobState> apply(const JobNetRequest& request);

    // How the last apply() spent its time on the node's lock (flock(state_dir/lock)),
    // in wall ms: waiting for it (other prologs, epilogs, a converge holding it),
    // then holding it (this job's state files, tc, nft and cgroup work), and the
    // process CPU used while holding it (held - CPU: preempted, or blocked in the
    // kernel). The prolog logs them (bench/launch_storm.sh).
    struct LockTimes {
        double wait_ms = 0;
        double held_ms = 0;
        double held_cpu_ms = 0;
        // Of the hold, the time the holder was runnable but not running
        // (preempted); none where the kernel does not say.
        std::optional<double> held_runqueue_ms;
    };
    LockTimes last_lock_times() const;

    // Move `pid` into the job's cgroup (no-op when the cgroup is Slurm's).
    Result<void> attach(uint32_t job_id, pid_t pid);
    // Same without opening netlink/nft: for slurm_spank_task_init_privileged.
    static Result<void> attach_task(const NodeConfig& config, uint32_t job_id, pid_t pid);

    // Prolog, when nothing is shaped for the job on this node (no Lanes decision,
    // a class without network settings, no NIC configured here): a record saying
    // why, so that a missing record at task launch is an error, never "nothing to
    // do". An existing shaped state is left as it is.
    static Result<void> record_unshaped(const NodeConfig& config, uint32_t job_id, const std::string& class_name,
                                        const std::string& why);
    // Epilog without a shaper (nothing configured here): drop such a record.
    static Result<void> forget_unshaped(const NodeConfig& config, uint32_t job_id);

    // Every step's start (slurmstepd, as root; Slurm's job cgroup exists by then)
    // and each task: where the job is keyed on Slurm's job_<id> dir, make sure the
    // nft map holds that dir's id (once; later calls only read the state file and
    // stat the dir). Fails, naming the job, when the job has no state here or
    // Slurm's dir cannot be found or keyed: the caller fails the launch.
    static Result<JobState> classify_step(const NodeConfig& config, const std::string& hostname, uint32_t job_id,
                                          LogSink log = {});
    // The same with injected kernel interfaces (unit tests): `make_marker` is
    // called only when the map needs a change.
    using MarkerFactory = std::function<Result<std::unique_ptr<PacketMarker>>(const Cgroup2Mount&)>;
    static Result<JobState> classify_step_with(const NodeConfig& config, const std::string& hostname, uint32_t job_id,
                                               std::unique_ptr<CgroupTree> cgroups, const MarkerFactory& make_marker,
                                               LogSink log = {});

    // Epilog: the job's classes, nft chain + map element, cgroup dir (moving any
    // leftover pids to the parent first), state file. Absent = success; a kernel
    // object already gone is not an error.
    Result<void> remove(uint32_t job_id);

    // All jobs with state files, by job id.
    std::vector<JobState> list() const;

    // The parked pool: classes of ended jobs kept for the next ones (ParkedClass).
    std::vector<ParkedClass> parked() const;

    // Per device of the job's class, counted from when the job got it (a class
    // taken over from the pool has a baseline). Fails if the job is unknown.
    Result<std::map<std::string, ClassCounters>> counters(uint32_t job_id);

    // Remove every job for which job_alive(state) is false (node_facts.hpp
    // LivenessProbe: alive until its epilog); returns their ids.
    Result<std::vector<uint32_t>> reconcile(const std::function<bool(const JobState&)>& job_alive);

    // Every job, then the nft table and our root qdisc on every selected NIC.
    Result<void> remove_all();

    // After `nft flush ruleset` (Debian's nftables.conf starts with it; `systemctl
    // reload nftables`) or a `tc qdisc del`, every running job's marks/classes are
    // gone. check() is converge(dry_run = true) (a few netlink dumps, no change);
    // reapply() is converge(): it puts back what differs from the desired state,
    // a shifted ceil included. `only_if_needed` is kept for callers: converge
    // never touches what is in place.
    struct Reapplied {
        bool needed = false;   // something was missing
        std::size_t jobs = 0;  // jobs with state files
        std::string what;      // what was missing, for the log
    };
    Result<Reapplied> check();
    Result<Reapplied> reapply(bool only_if_needed);

    // The one reconciler. Under the lock: re-selects this node's NICs (a NIC that
    // came up, was renamed or recreated is picked up, with its new index), dumps
    // tc on each (root, classes, qdiscs), checks the nft table and elements and the
    // GSO bounds, compares all of it with every job's desired state and repairs
    // exactly what differs (converge_plan.hpp). Idempotent: a second call right
    // after reports no repair. Never touches objects Lanes does not own. A repair
    // that fails is reported in `problems`; the call fails only when the kernel
    // cannot be read or the lock not taken. `dry_run`: report, change nothing.
    Result<ConvergeReport> converge(bool dry_run = false);

    // A ceil shift (and its end): records the ceil in each job's desired state
    // (JobDevice.ceil_now_bits, JobState.ceil_cause = `cause`) and applies it (one
    // RTM_NEWTCLASS per job and NIC, under the job's own root major), under the
    // lock. A change for a job that ended meanwhile is reported, never applied (an
    // epilog's removal is never undone). Fails only when the lock cannot be taken.
    Result<std::vector<CeilSet>> set_ceils(const std::vector<CeilChange>& changes, const std::string& cause);

    // The NICs selected for this node, as seen at open() (or the last converge()).
    const std::vector<NicFacts>& nics() const;
    // What open() skipped and why (selector matching no interface, link down,
    // link speed unknown): shaping goes on with the rest.
    const std::vector<std::string>& problems() const;
    // Does any [[nodes.nic]] apply to `hostname`? false = nothing configured for
    // this node (not an error: its jobs run unshaped, recorded as such).
    static bool selects_nics(const NodeConfig& config, const std::string& hostname);
    // "fq_codel" or "pfifo".
    const std::string& leaf_qdisc_kind() const;

    // Per NIC, the counters of the job's ingress class on the NIC's IFB
    // (ingress_plan.hpp); empty when the job has no ingress cap. Fails if the
    // job is unknown.
    Result<std::map<std::string, ClassCounters>> ingress_counters(uint32_t job_id);

private:
    struct Impl;
    explicit NodeShaper(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace lanes
