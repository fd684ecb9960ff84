// SPDX-License-Identifier: GPL-2.0-or-later
// Per-job ingress caps (issue 21, part 2): the pure half. Every job's desired
// state (JobState.ingress_devices) and what the kernel shows -> the operations
// that make it so. One planner for the prolog, the epilog, converge() and gc:
// level-triggered like converge_plan.hpp, so running it twice changes nothing
// the second time.
//
// How a job's arriving packets reach its class. A packet's socket cgroup is not
// known before the IP layer, and tc ingress runs before it (and before
// conntrack), so the job is found by its flow, learnt from what it sends:
//
//   table netdev lanes_in {
//     set jobs { type classid; }           one element per job with an ingress cap: M:<minor>
//     map flows4 { type ipv4_addr . inet_service . ipv4_addr . inet_service : classid;
//                  flags dynamic,timeout; timeout 120s; }
//     map flows6 { typeof th dport . th sport . @nh,256,64 : meta priority; ... }
//     chain eg_<h> { type filter hook egress device NIC priority 0;      per managed NIC
//       meta priority @jobs update @flows4 { ip daddr . th dport . ip saddr . th sport : meta priority }
//       meta protocol ip6 meta priority @jobs update @flows6 { th dport . th sport . @nh,256,64 : meta priority }
//     }
//     chain in_<h> { type filter hook ingress device NIC priority 0;
//       meta priority set ip saddr . th sport . ip daddr . th dport map @flows4 fwd to "lanes-ifb<h>"
//       meta protocol ip6 meta priority set th sport . th dport . @nh,128,64 map @flows6 fwd to "lanes-ifb<h>"
//     }
//   }
//
// The job's packets leave with skb->priority = M:<minor> (packet_marker.hpp's
// out chain): the NIC's egress hook records the reply's 5-tuple with that value
// (only for jobs in @jobs). An arriving packet of such a flow gets the job's
// M:<minor> as its priority and is forwarded to the NIC's IFB device, whose HTB
// root (handle M:0, like the egress root) takes the class from skb->priority:
// no tc filter, no conntrack, no connmark. Packets of other flows never leave
// the NIC's receive path. A flow is forgotten 120 s after the job last sent on
// it (TCP acknowledges what it receives, so a receiving stream keeps its entry).
// TCP, UDP and SCTP flows (th); a flow that only receives (UDP with no reply) is
// not learnt. IPv6 flows are keyed by both ports and the low 64 bits of the
// remote address (@nh,256,64 leaving, @nh,128,64 arriving): nft 1.0.6 (Debian
// 12) puts the value of a dynamic map over a key longer than 16 bytes (or aborts,
// netlink_linearize.c). Two flows that differ only in the remote address's
// prefix or in the node's own address, with both ports the same, share an entry.
//
// On the IFB (one per managed NIC that has a job with an ingress cap, named
// lanes-ifb<h>, h = 6 hex digits of a hash of the NIC's name, alias
// "lanes ingress of NIC"):
//   M:0 htb root, default M:fffe;  M:1 parent (link speed);  M:fffe default class
//   at link speed (unshaped);  M:<minor> per job, rate/ceil from its ingress caps
//   resolved against the NIC's link speed, HTB prio from its class rank, leaf
//   qdisc as on egress. Work-conserving: jobs borrow up to their ceil.
//
// The IFB devices and the netdev table are Lanes' alone: classes on an IFB that
// belong to no job are deleted, and an IFB no job needs (the node's last job
// with an ingress cap ended) is deleted with the table's chains for its NIC.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/lanes_toml.hpp"
#include "node/converge_plan.hpp"  // Repair
#include "node/shaping_plan.hpp"
#include "node/traffic_control.hpp"  // TcSnapshot

namespace lanes {

inline constexpr const char* kIngressTable = "lanes_in";
inline constexpr const char* kIfbPrefix = "lanes-ifb";
inline constexpr int kIngressFlowTimeoutSeconds = 120;

// "lanes-ifb" + 6 hex digits (FNV-1a of `nic`, 24 bits): at most 15 characters.
std::string ifb_device_name(const std::string& nic);
// The 6 hex digits alone (the chains' names: eg_<h>, in_<h>).
std::string ingress_device_tag(const std::string& nic);

// The job's ingress class on each NIC (resolve_rates() of its ingress caps); empty
// when the job has none.
std::vector<JobDevice> resolve_ingress(const NetworkDecision& net, const std::vector<NicFacts>& nics);

// An IFB as the kernel shows it (absent: exists = false).
struct IfbObserved {
    std::string device;  // lanes-ifb<h>
    bool exists = false;
    bool up = false;
    TcSnapshot tc;
};
// The netdev table: which NICs have both chains, which jobs are in @jobs.
struct IngressNftObserved {
    bool table = false;
    std::set<std::string> nics;  // chains eg_<h> and in_<h> in place, forwarding to the NIC's IFB
    std::set<uint32_t> jobs;     // M:<minor> elements of @jobs
};

struct EnsureIfb {  // create (or bring up) the IFB of `nic`
    std::string nic;
    std::string ifb;
    bool operator==(const EnsureIfb&) const = default;
};
struct DeleteIfb {  // absent is fine; its qdiscs and classes go with it
    std::string ifb;
    bool operator==(const DeleteIfb&) const = default;
};
struct NftIngressBase {  // the table with chains for exactly these NICs; none: the table goes
    std::vector<std::string> nics;
    bool operator==(const NftIngressBase&) const = default;
};
struct NftIngressJobs {  // @jobs elements (M:<minor>)
    std::vector<uint32_t> add;
    std::vector<uint32_t> remove;
    bool operator==(const NftIngressJobs&) const = default;
};
// tc operations (EnsureRoot, AddClass, AddLeafQdisc, DeleteClass) name the IFB
// with ifindex 0: the executor looks it up (the IFB may be made by the same plan).
using IngressOp = std::variant<EnsureIfb, DeleteIfb, NftIngressBase, NftIngressJobs, Operation>;

std::string describe(const IngressOp& op);

struct IngressStep {
    Repair repair;  // object "ifb", "ifb_root", "ifb_class", "ifb_leaf", "nft_ingress", "nft_ingress_job"
    std::vector<IngressOp> operations;
};
struct IngressPlan {
    std::vector<IngressStep> steps;
};

// `jobs`: every state file; `nics`: the selected NICs (link speeds); `ifbs`: the
// IFB of every selected NIC, and any other lanes-ifb* device found; `nft`: the
// netdev table. `nft_ok` false: the table could not be read (nothing nft is planned).
IngressPlan plan_ingress(const std::vector<JobState>& jobs, const std::vector<NicFacts>& nics,
                         const std::vector<IfbObserved>& ifbs, const IngressNftObserved& nft,
                         const std::string& leaf_kind);

// The interface indexes a NIC's chains were bound to when they were made. The
// kernel binds a netdev chain's hook to a device once, and nft resolves
// `fwd to "NAME"` to an index when it loads the rule: a NIC deleted and made
// again (a driver reload, a VF reset) leaves chains that `nft list` still shows
// on it but that see no packet (a counter in such a chain stays at 0: the job's
// flows are no longer learnt, its stream no longer capped), and an IFB made
// again between two converges leaves `fwd` pointing at an index that is gone.
// So the index of each is written in the chain's first rule as a comment
// ("lanes: NIC ifindex 5, IFB ifindex 9"), and a chain whose indexes are not
// the devices' now is rebuilt.
struct IngressBinding {
    unsigned nic_ifindex = 0;
    unsigned ifb_ifindex = 0;
    bool operator==(const IngressBinding&) const = default;
};
// The comment's indexes in a chain's listing (`nft list chain`); nullopt
// without one (a chain made by an older Lanes: rebuilt once).
std::optional<IngressBinding> ingress_chain_binding(std::string_view chain_listing);

// The libnftables script of NftIngressBase (pure; unit-tested), and of a
// job element change. `bindings`: the NICs' and IFBs' indexes now (a NIC
// without one gets no comment).
std::string nft_ingress_base_script(const std::vector<std::string>& nics, bool table_exists,
                                    const std::map<std::string, IngressBinding>& bindings = {});
std::string nft_ingress_jobs_script(const NftIngressJobs& op);

}  // namespace lanes
