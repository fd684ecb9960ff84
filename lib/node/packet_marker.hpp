// SPDX-License-Identifier: GPL-2.0-or-later
// The nftables side of shaping: which packets belong to which job, and their marks.
//
//   table inet lanes {
//     map prio { type cgroupsv2 : classid; }          cgroup id -> M:<minor>
//     set dscp_34 { type cgroupsv2; }                  one set per DSCP value in use
//     chain out { type filter hook output priority mangle; policy accept;
//       meta nfproto ipv4 ip dscp set cs0               (unclassified DSCP, first:
//       meta nfproto ipv6 ip6 dscp set cs0               every packet, jobs' too)
//       meta priority set socket cgroupv2 level L map @prio          per level L
//       socket cgroupv2 level L @dscp_34 ip dscp set af41            per level L and
//       socket cgroupv2 level L @dscp_34 ip6 dscp set af41           DSCP value in use
//     }
//   }
//
// A job is one element in `prio` and (when its class has a DSCP) one in its
// `dscp_<d>` set, keyed by the cgroup id (the dir's inode, as nft resolves a
// cgroupsv2 path). No chain per job, no verdict map: adding or removing a job is one
// nf_tables transaction of one or two set elements, and the kernel validates
// nothing else (a transaction that touches jump/goto targets re-validates the whole
// chain graph, which made the per-job chains of before grow with the job count).
// Per packet: hash lookups, as many as levels x (1 + DSCP values in use), whatever
// the number of jobs.
//
// Nothing escapes the DSCP rewrite: every packet first gets the unclassified DSCP
// (node.unclassified_dscp, default CS0; "keep" leaves it alone), then a job's
// packets get their class's. Packets of non-full sockets (TIME_WAIT, kernel
// replies) keep the unclassified DSCP. HTB picks the class from skb->priority
// (major = our root), so no tc filter is needed; packets without a job's priority
// fall to the default class M:fffe.
//
// `socket cgroupv2` sees the cgroup a socket was created in: only sockets opened
// after the task joined the job's cgroup are marked.
//
// The base (table, map, sets, out chain) is made by libnftables from a script, in
// one transaction that also rewrites the out rules (atomic: no window without
// marks), only when it lacks a level or DSCP value a job needs, or the unclassified
// DSCP changed. Which levels and values it covers is read back from the out
// rules' comments (one small dump per process; also how a flushed ruleset is
// noticed). Elements are raw nfnetlink batches on one long-lived socket
// (netlink_socket.hpp): libnftables can only name a cgroupsv2 key by its path,
// gone once the dir is, and listing a cgroupsv2 map walks /sys/fs/cgroup.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "core/result.hpp"
#include "node/cgroup_tree.hpp"
#include "node/shaping_plan.hpp"

namespace lanes {

inline constexpr const char* kNftTable = "lanes";

// What the out chain covers.
struct MarkerBase {
    std::set<int> levels;                 // cgroup levels matched
    std::set<uint8_t> dscps;              // DSCP values with a set and rules
    std::optional<uint8_t> unclassified;  // rewrite of every packet first; nullopt = keep
    bool operator==(const MarkerBase&) const = default;
    // Everything `other` needs is here (levels, values, same unclassified).
    bool covers(const MarkerBase& other) const;
};

// Where a job's cgroup is, as the marker keys it.
struct MarkedCgroup {
    uint64_t id = 0;  // inode of the dir
    int level = 0;    // depth in the cgroup2 hierarchy
};

// The result of a ruleset check against the state files.
struct MarkerCheck {
    bool base_ok = false;                // table, map, sets and rules as wanted
    std::vector<uint32_t> jobs_missing;  // jobs whose elements are not all there
    bool ok() const { return base_ok && jobs_missing.empty(); }
};

class PacketMarker {
public:
    virtual ~PacketMarker() = default;

    // The base every later add_job ensures: the unclassified DSCP and the levels
    // and values known up front (more are added as jobs need them).
    virtual void set_base(const MarkerBase& wanted) = 0;

    // Where `cgroup` (relative to the cgroup2 mount) is: its id and level. Fails when
    // the dir does not exist.
    virtual Result<MarkedCgroup> resolve(const std::string& cgroup) = 0;

    // One job: makes sure the base covers its level and DSCP (building or
    // extending it), then adds its elements. `op.cgroup_id`/`op.level` 0 = resolve
    // from `op.cgroup`. `*base_rebuilt` is set when the table was missing (a flushed
    // ruleset): the caller then re-adds every other job.
    virtual Result<MarkedCgroup> add_job(const NftEnsureJob& op, bool* base_rebuilt) = 0;

    // Absent = success (also when the table, the set or the element is gone).
    virtual Result<void> remove_job(const NftRemoveJob& op) = 0;

    // Compare the kernel with `jobs` (as in their state files).
    virtual Result<MarkerCheck> check(const std::vector<NftEnsureJob>& jobs) = 0;

    // The whole table from scratch in one transaction, then every job's elements.
    virtual Result<void> rebuild(const std::vector<NftEnsureJob>& jobs) = 0;

    // Drop the whole table.
    virtual Result<void> remove_all() = 0;
};

// The real one: one long-lived libnftables context (base ruleset) and one
// long-lived NETLINK_NETFILTER socket (elements, checks). Keep it open: closing a
// netfilter socket right after a delete waits for an RCU grace period (~10 ms).
Result<std::unique_ptr<PacketMarker>> make_nftables_packet_marker(const Cgroup2Mount& mount, LogSink log);

// The base script (pure; unit-tested): table, map, sets and the out chain, its
// rules rewritten, in one transaction.
std::string nft_base_script(const MarkerBase& base);
// The comment on each out rule, from which the covered base is read back.
std::string nft_rule_comment(int level, std::optional<uint8_t> dscp, bool unclassified);
// Reads one comment back into `base` (false: not one of ours).
bool nft_parse_rule_comment(const std::string& comment, MarkerBase& base);

// The element batches (pure; unit-tested). BATCH_BEGIN, the nf_tables messages
// (sequence numbers from `seq`), BATCH_END; only the last inner message asks
// for an ack (errors are always reported).
std::vector<uint8_t> nft_add_job_batch(const NftEnsureJob& op, uint32_t seq);
std::vector<uint8_t> nft_remove_job_batch(const NftRemoveJob& op, uint32_t seq);
// Every job's elements in one transaction (a rebuild after a flushed ruleset).
std::vector<uint8_t> nft_add_jobs_batch(const std::vector<NftEnsureJob>& jobs, uint32_t seq);
std::string nft_dscp_set_name(uint8_t dscp);  // "dscp_34"
std::string nft_priority(uint32_t priority);  // 0x1a4e0007 -> "1a4e:7"

// The level of a dir relative to the cgroup2 mount ("lanes/job_7" -> 2 on a
// mount of "/"): components of the mount's root plus those of the path.
int cgroup_level(const Cgroup2Mount& mount, const std::string& relative);

}  // namespace lanes
