// The nftables side of shaping: which packets belong to which job, and their marks.
//
//   table inet lanes {
//     map jobs { type cgroupsv2 : verdict; }
//     chain out { type filter hook output priority mangle; policy accept;
//                 socket cgroupv2 level L vmap @jobs; }     (one rule per level in use)
//     chain job_7 { meta priority set 1a4e:7 counter;
//                   meta nfproto ipv4 ip dscp set cs1; meta nfproto ipv6 ip6 dscp set cs1; }
//   }
//   jobs: "unified/lanes/job_7" : goto job_7
//
// HTB picks the class from skb->priority (major = our root), so no tc filter is
// needed. `socket cgroupv2` sees the cgroup a socket was created in: only sockets
// opened after the task joined the job's cgroup are marked.
//
// The base (table, map, out chain) is made by libnftables from a script, once per
// process, in one transaction that also rewrites the out rules (atomic: no window
// without marks). A job is one nf_tables transaction to add (chain, its rules, map
// element) and one to remove, built here as raw nfnetlink batches on one
// long-lived socket: libnftables would dump every chain of the table for each
// rule or element it adds (O(jobs) per job), and can only name a cgroupsv2 key by
// its path (gone once the dir is). The key is the cgroup id (the dir's inode, as
// nft itself resolves it). Nothing in the job path lists or echoes: listing a
// cgroupsv2 map walks /sys/fs/cgroup.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "core/result.hpp"
#include "node/shaping_plan.hpp"

namespace lanes {

inline constexpr const char* kNftTable = "lanes";

class PacketMarker {
public:
    virtual ~PacketMarker() = default;
    // Table, map, and the out chain with one vmap rule per cgroup level.
    virtual Result<void> ensure_base(const std::vector<int>& levels) = 0;
    virtual Result<void> add_job(const NftEnsureJob& op) = 0;
    // Key the job's chain on one more cgroup id (map element; already there = success).
    virtual Result<void> add_job_cgroup(uint32_t job_id, uint64_t cgroup_id) = 0;
    // Absent = success (also when the cgroup dir is already gone).
    virtual Result<void> remove_job(const NftRemoveJob& op) = 0;
    // Drop the whole table.
    virtual Result<void> remove_all() = 0;
};

// The real one: one long-lived libnftables context (base ruleset) and one
// long-lived NETLINK_NETFILTER socket (jobs). Keep it open: closing a netfilter
// socket right after a delete waits for an RCU grace period (~10 ms).
Result<std::unique_ptr<PacketMarker>> make_nftables_packet_marker(LogSink log);

// The base script and the per-job batches (pure; unit-tested). Batches are
// BATCH_BEGIN, the nf_tables messages (sequence numbers from `seq`), BATCH_END.
std::string nft_base_script(const std::vector<int>& levels);
std::vector<uint8_t> nft_add_job_batch(const NftEnsureJob& op, uint32_t seq);
std::vector<uint8_t> nft_remove_job_batch(const NftRemoveJob& op, uint32_t seq);
std::string nft_chain_name(uint32_t job_id);       // "job_7"
std::string nft_priority(uint32_t priority);       // 0x1a4e0007 -> "1a4e:7"

}  // namespace lanes
