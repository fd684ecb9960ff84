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
// The base (table, map, out chain) is made once at open, in one transaction that
// also rewrites the out rules (atomic: no window without marks). A job is one
// transaction to add (chain, its rules, map element) and one to remove. Nothing in
// the job path lists or echoes: listing a cgroupsv2 map walks /sys/fs/cgroup.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "log.hpp"
#include "result.hpp"
#include "shaping_plan.hpp"

namespace lanes {

inline constexpr const char* kNftTable = "lanes";

class PacketMarker {
public:
    virtual ~PacketMarker() = default;
    // Table, map, and the out chain with one vmap rule per cgroup level.
    virtual Result<void> ensure_base(const std::vector<int>& levels) = 0;
    virtual Result<void> add_job(const NftEnsureJob& op) = 0;
    // Absent = success. When the cgroup dir is gone, the element is deleted by its
    // cgroup id (nft itself can only name elements by path).
    virtual Result<void> remove_job(const NftRemoveJob& op) = 0;
    // Drop the whole table.
    virtual Result<void> remove_all() = 0;
};

// The real one: one long-lived libnftables context. `sys_fs_cgroup` is where nft
// resolves cgroupsv2 keys ("/sys/fs/cgroup").
Result<std::unique_ptr<PacketMarker>> make_nftables_packet_marker(LogSink log);

// The nft scripts (pure; unit-tested).
std::string nft_base_script(const std::vector<int>& levels);
std::string nft_add_job_script(const NftEnsureJob& op);
// `by_path`: delete the map element by its cgroup path (dir still there); otherwise
// only the chain (the element is deleted separately by id).
std::string nft_remove_job_script(const NftRemoveJob& op, bool by_path);
std::string nft_chain_name(uint32_t job_id);       // "job_7"
std::string nft_priority(uint32_t priority);       // 0x1a4e0007 -> "1a4e:7"

}  // namespace lanes
