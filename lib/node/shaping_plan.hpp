// SPDX-License-Identifier: GPL-2.0-or-later
// The pure half of node-side shaping: (request, NIC facts, existing jobs) -> the
// list of kernel operations that make it so. No I/O here; node_shaper.cpp runs the
// operations through TrafficControl, PacketMarker and CgroupTree.
//
// Layout on every selected NIC (M = NodeConfig.root_handle_major, default 0x1a4e):
//
//   M:0      root qdisc, htb, default M:fffe
//   M:1      parent class, rate = ceil = link speed
//   M:fffe   default class (everything not in a job: slurmd, ssh, storage, ...),
//            rate = 10% of link (a floor so node traffic is never starved),
//            ceil = link, HTB prio 7 (borrows last)
//   M:<minor> one leaf class per job, parent M:1, rate/ceil from the job's class,
//            HTB prio from the class rank; leaf qdisc fq_codel when the kernel has
//            it, else pfifo (logged once)
//
// A job's packets reach its class without any tc filter: the nftables chain of the
// job sets skb->priority to M:<minor>, and HTB takes the class from skb->priority
// when its major matches the qdisc. See packet_marker.hpp for the ruleset.
//
// A "foreign" root is a root qdisc with a non-zero handle that is not our htb (the
// kernel's own defaults, mq/pfifo_fast/noqueue/fq_codel, have handle 0: and are not
// foreign). Refuse: apply fails naming the NIC and the qdisc. Adopt: it is replaced,
// with an error-level log line.
//
// Our root and default class stay when the last job leaves (harmless: default
// class = link); NodeShaper::remove_all() (lanesctl gc --all) removes them and the
// kernel restores its default qdisc.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/job.hpp"
#include "core/lanes_toml.hpp"
#include "core/result.hpp"

namespace lanes {

// What the prolog asks for: one job, its class, the network part of the decision.
struct JobNetRequest {
    uint32_t job_id = 0;
    std::string class_name;
    NetworkDecision net;  // dscp, rate, ceil, rank (rdma_* are not ours)
    // The job's cgroup v2 dir, relative to the cgroup2 mount, when the caller knows
    // it (Slurm's "system.slice/<node>_slurmstepd.scope/job_<id>"): used as is, not
    // owned (never created or removed by Lanes), any depth. Empty: placed by
    // node.cgroup_root (cgroup_tree.hpp).
    std::string cgroup;
};

// What the kernel says about one selected NIC, gathered before planning.
struct NicFacts {
    std::string device;
    int ifindex = 0;
    uint64_t link_speed_bits = 0;  // resolved: sysfs, else selector/config override
    std::string root_kind;         // "" when the device has no root qdisc info
    uint32_t root_handle = 0;      // tc handle of the root qdisc (0 = kernel default)
    bool has_our_root = false;     // htb with handle M:0
    bool has_foreign_root_qdisc = false;
};

// One NIC of a job, with the rates resolved against that NIC.
struct JobDevice {
    std::string device;
    uint64_t rate_bits = 0;
    uint64_t ceil_bits = 0;  // the job's own ceil (its class's)
    // The ceil in force now when a signal's shift holds (lanes-agent, busy_ceil):
    // 0 = none, ceil_bits applies. Kept across reapply/converge (JobState.ceil_cause).
    uint64_t ceil_now_bits = 0;
    uint64_t ceil_in_force() const { return ceil_now_bits ? ceil_now_bits : ceil_bits; }
    bool operator==(const JobDevice&) const = default;
};

// A class's counters when a job took it over from the parked pool (HTB counts
// over a class's whole life): what the job's own counters are measured from.
struct CounterBase {
    uint64_t bytes = 0;
    uint64_t packets = 0;
    uint64_t drops = 0;
    uint64_t overlimits = 0;
    bool operator==(const CounterBase&) const = default;
};

// Everything Lanes created for one job; persisted in state_dir/job_<id> (0600).
struct JobState {
    uint32_t job_id = 0;
    std::string class_name;
    uint16_t minor = 0;  // HTB class M:<minor> on every device
    std::vector<JobDevice> devices;
    NetworkDecision net;
    std::string cgroup;         // absolute cgroup2 dir of the job
    std::string cgroup_key;     // the same, relative to the cgroup2 mount (marker key)
    bool cgroup_owned = false;  // Lanes made the dir (and removes it)
    // Keyed on Slurm's own job_<id> dir (its cgroup/v2 plugin runs here): `cgroup`
    // is where it is or will be; cgroup_id stays 0 until the job's first step has
    // keyed it (NodeShaper::classify_step).
    bool cgroup_slurm = false;
    uint64_t cgroup_id = 0;  // inode of the dir (the nft map key); 0 = unknown
    std::string boot_id;     // boot the prolog ran in ("" = unknown): older = gone
    // Why the prolog shaped nothing for this job here ("" = shaped). The prolog
    // records it so a missing state at task launch is an error, not "nothing to do".
    std::string unshaped;
    int cgroup_level = 0;  // depth of the dir (nft `socket cgroupv2 level`)
    // What teardown needs even if lanes.toml changed since the prolog:
    uint16_t root_major = 0;             // HTB root M the job's classes hang from
    std::optional<uint8_t> dscp_marked;  // the DSCP set the job's element is in
    // Per device, when the job's class was a parked one (absent: a new class).
    std::map<std::string, CounterBase> counter_base;
    // Why a device's ceil_now_bits differs from its ceil ("window busy-hours:
    // inference p99 above 80ms"); "" = no shift in force.
    std::string ceil_cause;
    // Selected NICs the job could not be shaped on at its prolog (link down,
    // speed unknown): NodeShaper::converge() gives the job its class there once
    // the NIC is up (and drops the name from here).
    std::vector<std::string> pending_devices;
    // The job's ingress class per NIC (ingress_plan.hpp: on the NIC's IFB, the
    // same M:<minor>); empty: no ingress cap.
    std::vector<JobDevice> ingress_devices;
    bool operator==(const JobState&) const = default;
};

// The HTB class of an ended job, kept for the next job (state_dir/parked/):
// no nft element points at it, its rate and ceil are the parked minimum
// (kParkedRateBits), its leaf qdisc is empty. Creating or deleting an HTB class
// makes the kernel walk every class of the qdisc (tc_bind_tclass), changing one
// does not: a job that takes a parked class over keeps setup and teardown flat
// however many jobs share the NIC.
struct ParkedClass {
    uint16_t minor = 0;
    uint16_t root_major = 0;
    std::vector<std::string> devices;  // the class exists on each (sorted)
    bool operator==(const ParkedClass&) const = default;
};

// ---- operations ---------------------------------------------------------------

inline constexpr uint16_t kParentMinor = 0x1;
inline constexpr uint16_t kDefaultMinor = 0xfffe;
inline constexpr uint16_t kFirstJobMinor = 0x2;
inline constexpr uint16_t kLastJobMinor = 0xfffd;

constexpr uint32_t tc_handle(uint16_t major, uint16_t minor) { return (static_cast<uint32_t>(major) << 16) | minor; }
// A tc handle as tc prints it: "1a4e:2a".
std::string handle_text(uint32_t handle);

// HTB class parameters, all explicit so the kernel never derives (and warns about)
// quantum from r2q, and 64-bit rates work (TCA_HTB_RATE64/CEIL64 above 2^32 B/s).
struct HtbParams {
    uint64_t rate_bits = 0;
    uint64_t ceil_bits = 0;
    uint32_t prio = 0;     // 0 (served first) .. 7
    uint32_t quantum = 0;  // bytes
    uint32_t burst = 0;    // bytes at rate
    uint32_t cburst = 0;   // bytes at ceil
    bool operator==(const HtbParams&) const = default;
};

// Root htb + parent class + default class on a NIC. Creates what is missing,
// replaces a foreign root only when `replace_foreign`.
struct EnsureRoot {
    std::string device;
    int ifindex = 0;
    uint16_t major = 0;
    HtbParams parent;          // M:1
    HtbParams fallback;        // M:fffe (the HTB "default" class)
    bool root_exists = false;  // our htb is there: only (re)set the two classes
    bool replace_foreign = false;
};
struct AddClass {  // create or replace M:minor under M:1
    std::string device;
    int ifindex = 0;
    uint32_t classid = 0;
    uint32_t parent = 0;
    HtbParams htb;
};
struct AddLeafQdisc {  // create or replace the qdisc under a job's class
    std::string device;
    int ifindex = 0;
    uint32_t parent = 0;  // the class
    uint32_t handle = 0;  // <minor>:0 (minors never equal the root major)
    std::string kind;     // "fq_codel" or "pfifo"
    uint32_t limit = 0;   // packets (pfifo) / fq_codel limit
};
struct DeleteLeafQdisc {  // the qdisc under a class; HTB grafts an empty default one
    std::string device;
    int ifindex = 0;
    uint32_t parent = 0;  // the class
};
struct DeleteClass {  // absent is fine; deleting it deletes its leaf qdisc
    std::string device;
    int ifindex = 0;
    uint32_t classid = 0;
};
struct DeleteRoot {  // only if it is ours
    std::string device;
    int ifindex = 0;
    uint16_t major = 0;
};
struct EnsureCgroup {
    std::string path;
};
struct RemoveCgroup {
    std::string path;
    std::string parent;
};                     // move leftovers to parent, rmdir
struct NftEnsureJob {  // one nft transaction: the job's prio and dscp elements
    uint32_t job_id = 0;
    std::string cgroup;           // relative to the cgroup2 mount ("lanes/job_7")
    uint32_t priority = 0;        // skb->priority = M:<minor>
    std::optional<uint8_t> dscp;  // nullopt: the unclassified DSCP
    uint64_t cgroup_id = 0;       // the key; 0 = the marker resolves `cgroup`
    int level = 0;                // depth of the dir; 0 = the marker resolves it
    bool operator==(const NftEnsureJob&) const = default;
};
struct NftRemoveJob {  // one nft transaction; absent is fine
    uint32_t job_id = 0;
    uint64_t cgroup_id = 0;  // the key (the dir may be gone)
    std::optional<uint8_t> dscp;
};

using Operation = std::variant<EnsureRoot, AddClass, AddLeafQdisc, DeleteLeafQdisc, DeleteClass, DeleteRoot,
                               EnsureCgroup, RemoveCgroup, NftEnsureJob, NftRemoveJob>;

// A human line per operation (logs, lanesctl --dry-run, test failure messages).
std::string describe(const Operation& op);

// ---- planning -----------------------------------------------------------------

// What the kernel and the cgroup tree look like for this job, gathered (under the
// lock) just before planning.
struct NodeFacts {
    std::vector<NicFacts> nics;   // the selected NICs, in selector order
    std::string leaf_qdisc_kind;  // "fq_codel" or "pfifo"
    std::string cgroup_dir;       // the job's cgroup2 dir (cgroup_tree.hpp: place_job_cgroup)
    std::string cgroup_parent;    // where leftover pids go at remove
    std::string cgroup_key;       // relative to /sys/fs/cgroup, for nft
    bool cgroup_owned = false;
    bool cgroup_slurm = false;  // Slurm's job dir (not ours to make or remove)
    // Slurm's job dir does not exist yet (PrologFlags=Contain: slurmstepd makes it
    // after the prolog): no marks now; the job's first step adds them.
    bool cgroup_pending = false;
};

struct Plan {
    JobState state;                     // what exists after the operations ran
    std::vector<Operation> operations;  // in order
    std::vector<std::string> warnings;  // oversubscribed NIC, adopted qdisc, ...
    bool unchanged = false;             // same request as the existing state
};

// The HTB parameters of a class of `rate`/`ceil` bits/s (see shaping_plan.cpp for
// the quantum and burst rules; unit-tested from 10 Mbit/s to 400 Gbit/s).
HtbParams htb_params(uint64_t rate_bits, uint64_t ceil_bits, uint32_t prio);

// Class rank (higher = served first) -> HTB prio 0..6 (7 is the default class).
uint32_t htb_prio_for_rank(int rank);

// A free minor for `job_id`: job_id itself when in [2, 0xfffd], free and not the
// root major (leaf qdiscs use <minor>:0 as handle), else the next free one after it
// (wrapping). `taken(minor)` says whether another job holds it. Fails only when all
// are taken.
Result<uint16_t> allocate_minor(uint32_t job_id, uint16_t root_major, const std::function<bool(uint16_t)>& taken);

// Rates of a request on one NIC: rate defaults to a 1% floor (>= 1 Mbit/s, <= ceil)
// when only a ceil is given; ceil defaults to rate; both are capped at the link.
JobDevice resolve_rates(const NetworkDecision& net, const NicFacts& nic);

// Prolog. `minor` comes from allocate_minor() (or `previous`); `previous` is the
// job's state if it was applied before (same minor; NICs no longer selected get
// their class deleted).
Result<Plan> plan_apply(const NodeConfig& config, const NodeFacts& facts, const JobNetRequest& request, uint16_t minor,
                        const std::optional<JobState>& previous);

// Epilog: every object of `state`, marks first, classes, then the cgroup dir.
// Uses the state's own root major (`major` only for states written before it was
// kept).
Plan plan_remove(const JobState& state, uint16_t major);

// Epilog into the pool: the same as plan_remove(), except that each class is
// changed to the parked minimum and its leaf qdisc (with whatever the job left
// queued) deleted, instead of the class being deleted. The job's nft element
// goes first. `ifindex`: of each of the state's devices.
Plan plan_park(const JobState& state, const std::map<std::string, int>& ifindex);
inline constexpr uint64_t kParkedRateBits = 8000;  // HTB's minimum; nothing is sent there

// The marks of a job as its state says (rebuild after a flushed ruleset).
NftEnsureJob nft_job_of(const JobState& state);

// lanesctl gc --all: every job, then our root on every NIC in `nics`.
std::vector<Operation> plan_remove_all(const std::vector<JobState>& jobs, const std::vector<NicFacts>& nics,
                                       uint16_t major);

}  // namespace lanes
