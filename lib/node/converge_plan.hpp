// SPDX-License-Identifier: GPL-2.0-or-later
// The pure half of NodeShaper::converge(): every job's desired state (its state
// file) and what the kernel shows now -> the repairs, each with the operations
// that make the kernel match again. No I/O here.
//
// Level-triggered: the input is the whole desired state and the whole observed
// state, never an event; what already matches yields nothing, so running the
// plan twice in a row repairs nothing the second time. Only Lanes' own objects
// are planned: our root htb (the jobs' root major) with its parent and default
// classes, the jobs' classes and their leaf qdiscs, the nft table inet lanes and
// its elements. A root qdisc of someone else is left alone unless
// node.foreign_qdisc = "adopt" (a problem is reported instead); classes under our
// root that belong to no job (parked ones, or unknown) are left as they are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "node/packet_marker.hpp"  // MarkerCheck
#include "node/shaping_plan.hpp"
#include "node/traffic_control.hpp"  // TcSnapshot

namespace lanes {

// One thing converge() found different from the desired state, and put back.
struct Repair {
    // "root_qdisc", "class", "leaf_qdisc", "nft_table", "nft_element",
    // "gso_max_size", "pending_nic"
    std::string object;
    // "missing" (gone from the kernel), "changed" (there, with other parameters
    // than desired), "link_up" (a NIC the job had no class on is up and selected)
    std::string cause;
    uint32_t job_id = 0;  // 0: the node's (root qdisc, nft table, GSO size)
    std::string device;   // "" for nftables
    std::string detail;   // what was seen and what was wanted, for the log
    bool operator==(const Repair&) const = default;
};

// A repair and the operations that make it (executed in order).
struct ConvergeStep {
    Repair repair;
    std::vector<Operation> operations;
};

// A selected NIC as the kernel shows it now (ifindex and root refreshed).
struct NicObserved {
    NicFacts nic;
    TcSnapshot tc;
};

struct ConvergePlan {
    std::vector<ConvergeStep> steps;
    // Jobs whose desired state grew (a NIC that came up): saved before the steps run.
    std::vector<JobState> changed_jobs;
    // What cannot be repaired here (a foreign root under node.foreign_qdisc =
    // "refuse", jobs under two root majors on one NIC), for the log and check.
    std::vector<std::string> problems;
};

// The root htb, parent and default class Lanes keeps on `nic` under `major`.
EnsureRoot plan_root(const NodeConfig& config, const NicFacts& nic, uint16_t major);

// The job's class on one NIC as its desired state says (the ceil in force, a
// shift included) and its leaf qdisc.
AddClass plan_job_class(const JobState& job, const JobDevice& dev, int ifindex);
AddLeafQdisc plan_job_leaf(const JobState& job, const JobDevice& dev, int ifindex, const std::string& leaf_kind);

// tc on every selected NIC: roots, the jobs' classes and leaves, and the classes
// of NICs a job lacks (down or absent at its prolog, renamed, recreated).
// `jobs`: every state file (unshaped ones are skipped).
ConvergePlan plan_converge_tc(const NodeConfig& config, const std::vector<JobState>& jobs,
                              const std::vector<NicObserved>& nics, const std::string& leaf_kind);

// nftables: the marks of every keyed job (cgroup_id != 0) against the kernel's.
struct NftConverge {
    bool rebuild = false;             // the table (or its base) is gone: all of `marks` in one transaction
    std::vector<NftEnsureJob> marks;  // rebuild: every job; else the jobs whose elements are missing
    std::vector<Repair> repairs;
};
// `wanted`: nft_job_of() of every keyed job (as passed to PacketMarker::check).
NftConverge plan_converge_nft(const std::vector<NftEnsureJob>& wanted, const MarkerCheck& check);

}  // namespace lanes
