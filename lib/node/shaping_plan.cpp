// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/shaping_plan.hpp"

#include "node/converge_plan.hpp"

#include <algorithm>
#include <cstdio>

namespace lanes {
namespace {

constexpr uint64_t kMtu = 1514;              // bytes, Ethernet frame
constexpr uint64_t kGsoMax = 65536;          // bytes, largest GSO/TSO skb
constexpr uint64_t kMinRateBits = 8000;      // HTB needs rate > 0
constexpr uint64_t kMinFloorBits = 1000000;  // 1 Mbit/s: floor of jobs without a rate
constexpr uint32_t kDefaultClassPrio = 7;
constexpr uint32_t kLeafLimitPackets = 1000;

std::string htb_text(const HtbParams& h) {
    return "rate " + format_rate(h.rate_bits) + " ceil " + format_rate(h.ceil_bits) + " prio " +
           std::to_string(h.prio) + " quantum " + std::to_string(h.quantum) + " burst " + std::to_string(h.burst) +
           " cburst " + std::to_string(h.cburst);
}

std::string root_text(const NicFacts& nic) { return nic.root_kind + " " + handle_text(nic.root_handle); }

}  // namespace

uint32_t htb_prio_for_rank(int rank) { return static_cast<uint32_t>(6 - std::clamp(rank, 0, 6)); }

HtbParams htb_params(uint64_t rate_bits, uint64_t ceil_bits, uint32_t prio) {
    HtbParams h;
    h.rate_bits = std::max(rate_bits, kMinRateBits);
    h.ceil_bits = std::max(ceil_bits, h.rate_bits);
    h.prio = std::min<uint32_t>(prio, 7);
    // Quantum: the bytes a class may send per DRR round when borrowing; ~1 ms at
    // its rate, at least one frame, at most 1 MiB (rate-proportional up to 8 Gbit/s).
    h.quantum = static_cast<uint32_t>(std::clamp<uint64_t>(h.rate_bits / 8 / 1000, kMtu, 1u << 20));
    // Buckets: 2 ms at the rate, at least two GSO skbs (so a TSO burst never stalls
    // a slow class), at most 1 GiB (400 Gbit/s * 2 ms = 100 MB).
    auto bucket = [](uint64_t bits) {
        return static_cast<uint32_t>(std::clamp<uint64_t>(bits / 8 / 500, 2 * kGsoMax, 1ull << 30));
    };
    h.burst = bucket(h.rate_bits);
    h.cburst = bucket(h.ceil_bits);
    return h;
}

Result<uint16_t> allocate_minor(uint32_t job_id, uint16_t root_major, const std::function<bool(uint16_t)>& taken) {
    constexpr uint32_t span = kLastJobMinor - kFirstJobMinor + 1;
    uint32_t start = (job_id >= kFirstJobMinor && job_id <= kLastJobMinor) ? job_id - kFirstJobMinor : job_id % span;
    for (uint32_t i = 0; i < span; ++i) {
        auto minor = static_cast<uint16_t>(kFirstJobMinor + (start + i) % span);
        if (minor == root_major) continue;
        if (!taken(minor)) return minor;
    }
    return fail("JobId=" + std::to_string(job_id) + ": no free HTB class minor (all " + std::to_string(span) +
                " in use)");
}

JobDevice resolve_rates(const NetworkDecision& net, const NicFacts& nic) {
    const uint64_t link = nic.link_speed_bits;
    JobDevice d;
    d.device = nic.device;
    if (net.ceil) d.ceil_bits = net.ceil->resolve(link);
    else if (net.rate) d.ceil_bits = net.rate->resolve(link);
    else d.ceil_bits = link;
    d.ceil_bits = std::clamp(d.ceil_bits, kMinRateBits, std::max(link, kMinRateBits));
    if (net.rate) d.rate_bits = net.rate->resolve(link);
    else d.rate_bits = std::max(link / 100, kMinFloorBits);
    d.rate_bits = std::clamp(d.rate_bits, kMinRateBits, d.ceil_bits);
    return d;
}

Result<Plan> plan_apply(const NodeConfig& config, const NodeFacts& facts, const JobNetRequest& request, uint16_t minor,
                        const std::optional<JobState>& previous) {
    const std::string job = "job " + std::to_string(request.job_id);
    if (facts.nics.empty()) return fail(job + ": no NIC selected for this node ([[nodes.nic]] in lanes.toml)");
    if (minor < kFirstJobMinor || minor > kLastJobMinor || minor == config.root_handle_major)
        return fail(job + ": HTB minor " + std::to_string(minor) + " out of range");
    if (facts.cgroup_dir.empty() || facts.cgroup_key.empty()) return fail(job + ": no cgroup dir placed");

    const uint16_t major = config.root_handle_major;
    Plan plan;
    JobState& st = plan.state;
    st.job_id = request.job_id;
    st.class_name = request.class_name;
    st.minor = minor;
    st.net = request.net;
    st.cgroup = facts.cgroup_dir;
    st.cgroup_key = facts.cgroup_key;
    st.cgroup_owned = facts.cgroup_owned;
    st.cgroup_slurm = facts.cgroup_slurm;
    if (previous && previous->cgroup == st.cgroup) st.cgroup_id = previous->cgroup_id;
    if (previous) st.counter_base = previous->counter_base;

    if (facts.cgroup_owned) plan.operations.push_back(EnsureCgroup{facts.cgroup_dir});

    for (const auto& nic : facts.nics) {
        if (nic.link_speed_bits == 0)
            return fail(job + ": NIC " + nic.device +
                        ": link speed unknown (sysfs has none); set link_speed in its [[nodes.nic]] "
                        "or nodes.default_link_speed");
        if (nic.has_foreign_root_qdisc) {
            if (config.foreign_qdisc == ForeignQdiscAction::Refuse)
                return fail(job + ": NIC " + nic.device + " has a root qdisc that is not Lanes' (" + root_text(nic) +
                            "); remove it or set node.foreign_qdisc = \"adopt\"");
            plan.warnings.push_back("NIC " + nic.device + ": replacing foreign root qdisc " + root_text(nic) +
                                    " with Lanes' htb " + handle_text(tc_handle(major, 0)) +
                                    " (node.foreign_qdisc = adopt)");
        }
        EnsureRoot root = plan_root(config, nic, major);
        root.root_exists = nic.has_our_root;
        root.replace_foreign = nic.has_foreign_root_qdisc;
        plan.operations.push_back(std::move(root));

        JobDevice dev = resolve_rates(request.net, nic);
        // A shift in force (lanes-agent) outlives a re-apply of the same request.
        if (previous)
            for (const auto& old : previous->devices)
                if (old.device == dev.device && old.ceil_bits == dev.ceil_bits && old.ceil_now_bits &&
                    old.ceil_now_bits >= dev.rate_bits && old.ceil_now_bits < dev.ceil_bits) {
                    dev.ceil_now_bits = old.ceil_now_bits;
                    st.ceil_cause = previous->ceil_cause;
                }
        const uint32_t classid = tc_handle(major, minor);
        plan.operations.push_back(
            AddClass{nic.device, nic.ifindex, classid, tc_handle(major, kParentMinor),
                     htb_params(dev.rate_bits, dev.ceil_in_force(), htb_prio_for_rank(request.net.rank))});
        plan.operations.push_back(AddLeafQdisc{nic.device, nic.ifindex, classid, tc_handle(minor, 0),
                                               facts.leaf_qdisc_kind, kLeafLimitPackets});
        st.devices.push_back(std::move(dev));
    }

    // A re-apply may have a smaller NIC set (config changed): drop the classes left.
    if (previous) {
        for (const auto& old : previous->devices) {
            bool kept = std::any_of(st.devices.begin(), st.devices.end(),
                                    [&](const JobDevice& d) { return d.device == old.device; });
            if (!kept) plan.operations.push_back(DeleteClass{old.device, 0, tc_handle(major, previous->minor)});
        }
    }

    st.root_major = major;
    st.cgroup_level = previous && previous->cgroup == st.cgroup ? previous->cgroup_level : 0;
    st.dscp_marked = request.net.dscp;
    // Marks that change (another DSCP, minor or dir) go first: an element holds one value.
    if (previous && previous->cgroup_id != 0 &&
        (previous->cgroup != st.cgroup || previous->dscp_marked != st.dscp_marked))
        plan.operations.insert(plan.operations.begin(),
                               NftRemoveJob{previous->job_id, previous->cgroup_id, previous->dscp_marked});
    NftEnsureJob mark{request.job_id,   st.cgroup_key, tc_handle(major, minor),
                      request.net.dscp, st.cgroup_id,  st.cgroup_level};
    if (!facts.cgroup_pending) plan.operations.push_back(mark);
    plan.unchanged = previous && *previous == st;
    return plan;
}

EnsureRoot plan_root(const NodeConfig& config, const NicFacts& nic, uint16_t major) {
    const uint64_t link = nic.link_speed_bits;
    EnsureRoot root;
    root.device = nic.device;
    root.ifindex = nic.ifindex;
    root.major = major;
    root.parent = htb_params(link, link, 0);
    // Traffic in no job's cgroup (ssh, slurmd, a process started outside srun):
    // its guaranteed rate and its cap, node.unclassified_rate/_ceil.
    const uint64_t ufloor = std::clamp(config.unclassified_rate.resolve(link), std::min(kMinFloorBits, link), link);
    const uint64_t uceil = std::clamp(config.unclassified_ceil.resolve(link), ufloor, link);
    root.fallback = htb_params(ufloor, uceil, kDefaultClassPrio);
    return root;
}

AddClass plan_job_class(const JobState& job, const JobDevice& dev, int ifindex) {
    return AddClass{dev.device, ifindex, tc_handle(job.root_major, job.minor), tc_handle(job.root_major, kParentMinor),
                    htb_params(dev.rate_bits, dev.ceil_in_force(), htb_prio_for_rank(job.net.rank))};
}

AddLeafQdisc plan_job_leaf(const JobState& job, const JobDevice& dev, int ifindex, const std::string& leaf_kind) {
    return AddLeafQdisc{dev.device, ifindex,          tc_handle(job.root_major, job.minor), tc_handle(job.minor, 0),
                        leaf_kind,  kLeafLimitPackets};
}

NftEnsureJob nft_job_of(const JobState& state) {
    return NftEnsureJob{state.job_id,      state.cgroup_key, tc_handle(state.root_major, state.minor),
                        state.dscp_marked, state.cgroup_id,  state.cgroup_level};
}

Plan plan_remove(const JobState& state, uint16_t major) {
    Plan plan;
    plan.state = state;
    if (state.root_major != 0) major = state.root_major;
    plan.operations.push_back(NftRemoveJob{state.job_id, state.cgroup_id, state.dscp_marked});
    for (const auto& dev : state.devices)
        plan.operations.push_back(DeleteClass{dev.device, 0, tc_handle(major, state.minor)});
    if (state.cgroup_owned) {
        std::string parent = state.cgroup.substr(0, state.cgroup.find_last_of('/'));
        plan.operations.push_back(RemoveCgroup{state.cgroup, parent});
    }
    return plan;
}

Plan plan_park(const JobState& state, const std::map<std::string, int>& ifindex) {
    Plan plan;
    plan.state = state;
    const uint16_t major = state.root_major;
    const uint32_t classid = tc_handle(major, state.minor);
    plan.operations.push_back(NftRemoveJob{state.job_id, state.cgroup_id, state.dscp_marked});
    for (const auto& dev : state.devices) {
        auto idx = ifindex.find(dev.device);
        const int index = idx == ifindex.end() ? 0 : idx->second;
        plan.operations.push_back(AddClass{dev.device, index, classid, tc_handle(major, kParentMinor),
                                           htb_params(kParkedRateBits, kParkedRateBits, kDefaultClassPrio)});
        plan.operations.push_back(DeleteLeafQdisc{dev.device, index, classid});
    }
    if (state.cgroup_owned) {
        std::string parent = state.cgroup.substr(0, state.cgroup.find_last_of('/'));
        plan.operations.push_back(RemoveCgroup{state.cgroup, parent});
    }
    return plan;
}

std::vector<Operation> plan_remove_all(const std::vector<JobState>& jobs, const std::vector<NicFacts>& nics,
                                       uint16_t major) {
    std::vector<Operation> ops;
    for (const auto& job : jobs) {
        auto p = plan_remove(job, major);
        for (auto& op : p.operations) ops.push_back(std::move(op));
    }
    for (const auto& nic : nics)
        if (nic.has_our_root) ops.push_back(DeleteRoot{nic.device, nic.ifindex, major});
    return ops;
}

std::string describe(const Operation& op) {
    struct Describe {
        std::string operator()(const EnsureRoot& o) const {
            std::string s = "tc: " + o.device + ": ";
            if (!o.root_exists)
                s += std::string(o.replace_foreign ? "replace" : "add") + " root htb " +
                     handle_text(tc_handle(o.major, 0)) + " default " + handle_text(tc_handle(o.major, kDefaultMinor)) +
                     "; ";
            return s + "class " + handle_text(tc_handle(o.major, kParentMinor)) + " " + htb_text(o.parent) +
                   "; class " + handle_text(tc_handle(o.major, kDefaultMinor)) + " " + htb_text(o.fallback);
        }
        std::string operator()(const AddClass& o) const {
            return "tc: " + o.device + ": class " + handle_text(o.classid) + " parent " + handle_text(o.parent) + " " +
                   htb_text(o.htb);
        }
        std::string operator()(const AddLeafQdisc& o) const {
            return "tc: " + o.device + ": qdisc " + o.kind + " " + handle_text(o.handle) + " parent " +
                   handle_text(o.parent) + " limit " + std::to_string(o.limit);
        }
        std::string operator()(const DeleteLeafQdisc& o) const {
            return "tc: " + o.device + ": delete the qdisc under class " + handle_text(o.parent);
        }
        std::string operator()(const DeleteClass& o) const {
            return "tc: " + o.device + ": delete class " + handle_text(o.classid);
        }
        std::string operator()(const DeleteRoot& o) const {
            return "tc: " + o.device + ": delete root htb " + handle_text(tc_handle(o.major, 0));
        }
        std::string operator()(const EnsureCgroup& o) const { return "cgroup: mkdir " + o.path; }
        std::string operator()(const RemoveCgroup& o) const {
            return "cgroup: rmdir " + o.path + " (leftover pids to " + o.parent + ")";
        }
        std::string operator()(const NftEnsureJob& o) const {
            std::string s =
                "nft: job " + std::to_string(o.job_id) + ": \"" + o.cgroup + "\" priority " + handle_text(o.priority);
            s += o.dscp ? " dscp " + std::to_string(*o.dscp) : std::string(" dscp unclassified");
            return s;
        }
        std::string operator()(const NftRemoveJob& o) const {
            return "nft: job " + std::to_string(o.job_id) + ": remove marks of cgroup id " +
                   std::to_string(o.cgroup_id);
        }
    };
    return std::visit(Describe{}, op);
}

std::string handle_text(uint32_t handle) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%x:%x", handle >> 16, handle & 0xffff);
    return buf;
}

}  // namespace lanes
