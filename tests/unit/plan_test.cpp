// SPDX-License-Identifier: GPL-2.0-or-later
// The pure shaping plan, the nft scripts and the tc message for HTB classes.
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "node/packet_marker.hpp"
#include "node/shaping_plan.hpp"
#include "node/traffic_control.hpp"
#include "tests/unit/test_util.hpp"

namespace lanes {
namespace {

using lanes::test::kGbit;

NicFacts nic(std::string dev, uint64_t speed) {
    NicFacts n;
    n.device = std::move(dev);
    n.ifindex = 3;
    n.link_speed_bits = speed;
    return n;
}

NodeFacts facts_for(uint32_t job, std::vector<NicFacts> nics) {
    NodeFacts f;
    f.nics = std::move(nics);
    f.leaf_qdisc_kind = "pfifo";
    f.cgroup_dir = "/sys/fs/cgroup/unified/lanes/job_" + std::to_string(job);
    f.cgroup_parent = "/sys/fs/cgroup/unified/lanes";
    f.cgroup_key = "lanes/job_" + std::to_string(job);
    f.cgroup_owned = true;
    return f;
}

JobNetRequest request(uint32_t job, std::optional<Rate> rate, std::optional<Rate> ceil = {},
                      std::optional<uint8_t> dscp = {}, int rank = 0) {
    JobNetRequest r;
    r.job_id = job;
    r.class_name = "training";
    r.net.rate = rate;
    r.net.ceil = ceil;
    r.net.dscp = dscp;
    r.net.rank = rank;
    return r;
}

Rate bits(uint64_t b) { return Rate{b, 0}; }
Rate percent(double p) { return Rate{0, p}; }

template <typename T>
std::vector<T> ops_of(const Plan& p) {
    std::vector<T> out;
    for (const auto& op : p.operations)
        if (auto* x = std::get_if<T>(&op)) out.push_back(*x);
    return out;
}

TEST(Plan, TwoJobsGetDistinctClassesAndMarks) {
    NodeConfig config;
    std::set<uint16_t> taken;
    std::vector<Plan> plans;
    for (uint32_t job : {7u, 8u}) {
        auto minor = allocate_minor(job, config.root_handle_major, [&](uint16_t m) { return taken.count(m) > 0; });
        ASSERT_TRUE(minor);
        taken.insert(*minor);
        auto p =
            plan_apply(config, facts_for(job, {nic("eth0", 25 * kGbit)}), request(job, bits(5 * kGbit)), *minor, {});
        ASSERT_TRUE(p) << p.error().message;
        plans.push_back(*p);
    }
    auto c7 = ops_of<AddClass>(plans[0]), c8 = ops_of<AddClass>(plans[1]);
    ASSERT_EQ(c7.size(), 1u);
    ASSERT_EQ(c8.size(), 1u);
    EXPECT_EQ(c7[0].classid, tc_handle(0x1a4e, 7));
    EXPECT_EQ(c8[0].classid, tc_handle(0x1a4e, 8));
    EXPECT_EQ(c7[0].parent, tc_handle(0x1a4e, kParentMinor));
    auto n7 = ops_of<NftEnsureJob>(plans[0]), n8 = ops_of<NftEnsureJob>(plans[1]);
    ASSERT_EQ(n7.size(), 1u);
    EXPECT_EQ(n7[0].priority, c7[0].classid);
    EXPECT_EQ(n8[0].priority, c8[0].classid);
    EXPECT_NE(n7[0].cgroup, n8[0].cgroup);
    auto q7 = ops_of<AddLeafQdisc>(plans[0]);
    ASSERT_EQ(q7.size(), 1u);
    EXPECT_EQ(q7[0].parent, c7[0].classid);
    EXPECT_EQ(q7[0].handle, tc_handle(7, 0));
    EXPECT_EQ(q7[0].kind, "pfifo");
}

TEST(Plan, OperationOrderCgroupFirstMarksLast) {
    NodeConfig config;
    auto p = plan_apply(config, facts_for(7, {nic("eth0", 25 * kGbit), nic("eth1", 25 * kGbit)}),
                        request(7, bits(kGbit), {}, 8), 7, {});
    ASSERT_TRUE(p);
    ASSERT_GE(p->operations.size(), 8u);
    EXPECT_TRUE(std::holds_alternative<EnsureCgroup>(p->operations.front()));
    EXPECT_TRUE(std::holds_alternative<NftEnsureJob>(p->operations.back()));
    EXPECT_EQ(ops_of<EnsureRoot>(*p).size(), 2u);
    EXPECT_EQ(p->state.devices.size(), 2u);
    for (const auto& op : p->operations) EXPECT_FALSE(describe(op).empty());

    auto r = plan_remove(p->state, config.root_handle_major);
    ASSERT_EQ(r.operations.size(), 4u);
    EXPECT_TRUE(std::holds_alternative<NftRemoveJob>(r.operations[0]));  // stop marking first
    EXPECT_TRUE(std::holds_alternative<DeleteClass>(r.operations[1]));
    EXPECT_TRUE(std::holds_alternative<DeleteClass>(r.operations[2]));
    ASSERT_TRUE(std::holds_alternative<RemoveCgroup>(r.operations[3]));
    EXPECT_EQ(std::get<RemoveCgroup>(r.operations[3]).parent, "/sys/fs/cgroup/unified/lanes");
}

TEST(Plan, ParkingChangesTheClassAndEmptiesItsLeafInsteadOfDeleting) {
    NodeConfig config;
    auto p = plan_apply(config, facts_for(7, {nic("eth0", 25 * kGbit), nic("eth1", 25 * kGbit)}),
                        request(7, bits(kGbit), {}, 8), 7, {});
    ASSERT_TRUE(p);
    auto r = plan_park(p->state, {{"eth0", 2}, {"eth1", 3}});
    ASSERT_EQ(r.operations.size(), 6u);
    EXPECT_TRUE(std::holds_alternative<NftRemoveJob>(r.operations[0]));  // stop marking first
    EXPECT_TRUE(ops_of<DeleteClass>(r).empty());
    auto changes = ops_of<AddClass>(r);
    ASSERT_EQ(changes.size(), 2u);
    EXPECT_EQ(changes[1].ifindex, 3);
    EXPECT_EQ(changes[0].classid, tc_handle(0x1a4e, 7));
    EXPECT_EQ(changes[0].htb.rate_bits, kParkedRateBits);
    EXPECT_EQ(changes[0].htb.ceil_bits, kParkedRateBits);
    EXPECT_EQ(changes[0].htb.prio, 7u);
    auto leaves = ops_of<DeleteLeafQdisc>(r);
    ASSERT_EQ(leaves.size(), 2u);
    EXPECT_EQ(leaves[0].parent, tc_handle(0x1a4e, 7));
    EXPECT_TRUE(std::holds_alternative<RemoveCgroup>(r.operations.back()));
    for (const auto& op : r.operations) EXPECT_FALSE(describe(op).empty());
}

TEST(Plan, SlurmJobDirNotYetMadeGetsClassesButNoMarks) {
    // PrologFlags=Contain: the prolog runs before slurmstepd makes job_<id>; the
    // job's first step adds the marks (NodeShaper::classify_step).
    NodeConfig config;
    NodeFacts f = facts_for(7, {nic("eth0", 25 * kGbit)});
    f.cgroup_dir = "/sys/fs/cgroup/system.slice/n1_slurmstepd.scope/job_7";
    f.cgroup_parent = "/sys/fs/cgroup/system.slice/n1_slurmstepd.scope";
    f.cgroup_key = "system.slice/n1_slurmstepd.scope/job_7";
    f.cgroup_owned = false;
    f.cgroup_slurm = true;
    f.cgroup_pending = true;
    auto p = plan_apply(config, f, request(7, bits(kGbit), {}, 34), 7, {});
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_TRUE(ops_of<NftEnsureJob>(*p).empty());
    EXPECT_TRUE(ops_of<EnsureCgroup>(*p).empty());  // Slurm's dir: never made by Lanes
    EXPECT_EQ(ops_of<AddClass>(*p).size(), 1u);
    EXPECT_TRUE(p->state.cgroup_slurm);
    EXPECT_EQ(p->state.cgroup_id, 0u);
    EXPECT_EQ(p->state.dscp_marked, std::optional<uint8_t>(34));
    // The epilog of a job never keyed: nothing to remove in nft, no rmdir.
    auto r = plan_remove(p->state, config.root_handle_major);
    EXPECT_TRUE(ops_of<RemoveCgroup>(r).empty());
    ASSERT_EQ(ops_of<NftRemoveJob>(r).size(), 1u);
    EXPECT_EQ(ops_of<NftRemoveJob>(r)[0].cgroup_id, 0u);  // the marker skips id 0
    // Once the dir exists (a prolog run again), the marks are planned.
    f.cgroup_pending = false;
    p = plan_apply(config, f, request(7, bits(kGbit), {}, 34), 7, {});
    ASSERT_TRUE(p);
    ASSERT_EQ(ops_of<NftEnsureJob>(*p).size(), 1u);
    EXPECT_EQ(ops_of<NftEnsureJob>(*p)[0].cgroup, "system.slice/n1_slurmstepd.scope/job_7");
}

TEST(Plan, ReapplyOfTheSameRequestIsUnchanged) {
    NodeConfig config;
    auto f = facts_for(7, {nic("eth0", 25 * kGbit)});
    auto first = plan_apply(config, f, request(7, bits(kGbit), {}, 10), 7, {});
    ASSERT_TRUE(first);
    EXPECT_FALSE(first->unchanged);
    auto again = plan_apply(config, f, request(7, bits(kGbit), {}, 10), 7, first->state);
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->unchanged);
    EXPECT_EQ(again->state, first->state);
    auto changed = plan_apply(config, f, request(7, bits(2 * kGbit), {}, 10), 7, first->state);
    ASSERT_TRUE(changed);
    EXPECT_FALSE(changed->unchanged);
    // A NIC no longer selected loses its class.
    auto two = plan_apply(config, facts_for(7, {nic("eth0", 25 * kGbit), nic("eth1", 25 * kGbit)}),
                          request(7, bits(kGbit)), 7, {});
    ASSERT_TRUE(two);
    auto shrunk = plan_apply(config, f, request(7, bits(kGbit)), 7, two->state);
    ASSERT_TRUE(shrunk);
    auto deletes = ops_of<DeleteClass>(*shrunk);
    ASSERT_EQ(deletes.size(), 1u);
    EXPECT_EQ(deletes[0].device, "eth1");
}

TEST(Plan, OurRootIsNotRecreated) {
    NodeConfig config;
    auto n = nic("eth0", 25 * kGbit);
    n.has_our_root = true;
    n.root_kind = "htb";
    n.root_handle = tc_handle(0x1a4e, 0);
    auto p = plan_apply(config, facts_for(7, {n}), request(7, bits(kGbit)), 7, {});
    ASSERT_TRUE(p);
    auto roots = ops_of<EnsureRoot>(*p);
    ASSERT_EQ(roots.size(), 1u);
    EXPECT_TRUE(roots[0].root_exists);
    EXPECT_FALSE(roots[0].replace_foreign);
    EXPECT_EQ(roots[0].parent.rate_bits, 25 * kGbit);
    EXPECT_EQ(roots[0].fallback.ceil_bits, 25 * kGbit / 4);   // unclassified_ceil 25%
    EXPECT_EQ(roots[0].fallback.rate_bits, 25 * kGbit / 20);  // unclassified_rate 5%
    EXPECT_EQ(roots[0].fallback.prio, 7u);
}

TEST(Plan, ForeignRootIsRefusedOrAdopted) {
    NodeConfig config;
    auto n = nic("ens1f0", 100 * kGbit);
    n.root_kind = "tbf";
    n.root_handle = tc_handle(1, 0);
    n.has_foreign_root_qdisc = true;
    auto refused = plan_apply(config, facts_for(7, {n}), request(7, bits(kGbit)), 7, {});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("ens1f0"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("tbf 1:0"), std::string::npos) << refused.error().message;
    EXPECT_NE(refused.error().message.find("adopt"), std::string::npos) << refused.error().message;

    config.foreign_qdisc = ForeignQdiscAction::Adopt;
    auto adopted = plan_apply(config, facts_for(7, {n}), request(7, bits(kGbit)), 7, {});
    ASSERT_TRUE(adopted);
    auto roots = ops_of<EnsureRoot>(*adopted);
    ASSERT_EQ(roots.size(), 1u);
    EXPECT_TRUE(roots[0].replace_foreign);
    ASSERT_EQ(adopted->warnings.size(), 1u);
    EXPECT_NE(adopted->warnings[0].find("ens1f0"), std::string::npos);
}

TEST(Plan, UnknownLinkSpeedFailsNamingTheNic) {
    NodeConfig config;
    auto p = plan_apply(config, facts_for(7, {nic("veth0", 0)}), request(7, bits(kGbit)), 7, {});
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message.find("veth0"), std::string::npos);
    EXPECT_NE(p.error().message.find("link speed"), std::string::npos);
    auto none = plan_apply(config, facts_for(7, {}), request(7, bits(kGbit)), 7, {});
    ASSERT_FALSE(none);
}

TEST(Plan, PercentRatesResolveAgainstEachNic) {
    NodeConfig config;
    auto p = plan_apply(config, facts_for(7, {nic("eth0", 25 * kGbit), nic("ib0", 100 * kGbit)}),
                        request(7, percent(40), percent(80)), 7, {});
    ASSERT_TRUE(p);
    ASSERT_EQ(p->state.devices.size(), 2u);
    EXPECT_EQ(p->state.devices[0].rate_bits, 10 * kGbit);
    EXPECT_EQ(p->state.devices[0].ceil_bits, 20 * kGbit);
    EXPECT_EQ(p->state.devices[1].rate_bits, 40 * kGbit);
    EXPECT_EQ(p->state.devices[1].ceil_bits, 80 * kGbit);
    auto classes = ops_of<AddClass>(*p);
    EXPECT_EQ(classes[1].htb.rate_bits, 40 * kGbit);
}

TEST(Plan, RateDefaults) {
    const NicFacts n = nic("eth0", 10 * kGbit);
    struct Case {
        std::optional<Rate> rate, ceil;
        uint64_t want_rate, want_ceil;
    } cases[] = {
        {bits(kGbit), {}, kGbit, kGbit},                 // ceil defaults to rate
        {{}, bits(2 * kGbit), 100'000'000, 2 * kGbit},   // rate: 1% floor of the link
        {{}, {}, 100'000'000, 10 * kGbit},               // no cap: ceil = link
        {bits(20 * kGbit), {}, 10 * kGbit, 10 * kGbit},  // capped at the link
        {bits(3 * kGbit), bits(kGbit), kGbit, kGbit},    // rate above ceil: ceil wins
        {{}, bits(500'000), 500'000, 500'000},           // floor never above the ceil
        {bits(0), {}, 8000, 8000},                       // HTB needs rate > 0
    };
    for (const auto& c : cases) {
        NetworkDecision net;
        net.rate = c.rate;
        net.ceil = c.ceil;
        auto d = resolve_rates(net, n);
        EXPECT_EQ(d.rate_bits, c.want_rate);
        EXPECT_EQ(d.ceil_bits, c.want_ceil);
    }
    auto slow = resolve_rates(NetworkDecision{}, nic("eth0", 10'000'000));
    EXPECT_EQ(slow.rate_bits, 1'000'000u);  // 1 Mbit/s floor on a 10 Mbit/s link
}

TEST(Plan, RankMapsToHtbPrio) {
    EXPECT_EQ(htb_prio_for_rank(-5), 6u);
    EXPECT_EQ(htb_prio_for_rank(0), 6u);
    EXPECT_EQ(htb_prio_for_rank(1), 5u);
    EXPECT_EQ(htb_prio_for_rank(6), 0u);
    EXPECT_EQ(htb_prio_for_rank(100), 0u);
}

TEST(Plan, HtbParamsAreSaneFrom10MbitTo400Gbit) {
    for (uint64_t rate : std::initializer_list<uint64_t>{10'000'000, 100'000'000, kGbit, 10 * kGbit, 25 * kGbit,
                                                         100 * kGbit, 400 * kGbit}) {
        auto h = htb_params(rate, rate, 3);
        EXPECT_EQ(h.rate_bits, rate);
        EXPECT_GE(h.quantum, 1514u) << rate;
        EXPECT_LE(h.quantum, 1u << 20) << rate;
        EXPECT_GE(h.burst, 2u * 65536) << rate;                              // two GSO skbs
        EXPECT_GE(static_cast<uint64_t>(h.burst), rate / 8 / 1000) << rate;  // >= 1 ms at rate
        // The bucket as a time must fit the u32 tick field without saturating.
        uint32_t ticks = htb_buffer_ticks(h.burst, rate);
        EXPECT_GT(ticks, 0u);
        EXPECT_LT(ticks, 0xffffffffu);
    }
    auto h = htb_params(400 * kGbit, 400 * kGbit, 0);
    EXPECT_EQ(h.burst, 100'000'000u);  // 2 ms at 400 Gbit/s
    // 2 ms in 64 ns ticks:
    EXPECT_EQ(htb_buffer_ticks(h.burst, 400 * kGbit), 2'000'000u / 64);
    EXPECT_EQ(htb_params(5, 1, 9).prio, 7u);
    EXPECT_EQ(htb_params(5, 1, 9).ceil_bits, 8000u);
}

// The RTM_NEWTCLASS message: 64-bit rates go in TCA_HTB_RATE64/CEIL64 with the
// 32-bit fields saturated; below 2^32 bytes/s the 32-bit fields carry them.
TEST(Plan, HtbMessageUses64BitAttributesAbove2To32BytesPerSecond) {
    struct Case {
        uint64_t rate, ceil;
        bool rate64, ceil64;
    } cases[] = {
        {400 * kGbit, 400 * kGbit, true, true},
        {10 * kGbit, 400 * kGbit, false, true},
        {10 * kGbit, 25 * kGbit, false, false},  // 25 Gbit/s = 3.1e9 B/s < 2^32
        {35 * kGbit, 35 * kGbit, true, true},    // 4.375e9 B/s
    };
    for (const auto& c : cases) {
        AddClass op{"eth0", 4, tc_handle(0x1a4e, 7), tc_handle(0x1a4e, 1), htb_params(c.rate, c.ceil, 2)};
        auto bytes = htb_class_message(op);
        ASSERT_FALSE(bytes.empty());
        auto* h = reinterpret_cast<nlmsghdr*>(bytes.data());
        EXPECT_EQ(h->nlmsg_type, RTM_NEWTCLASS);
        auto* t = static_cast<tcmsg*>(nlmsg_data(h));
        EXPECT_EQ(t->tcm_handle, op.classid);
        EXPECT_EQ(t->tcm_parent, op.parent);
        EXPECT_EQ(t->tcm_ifindex, 4);
        nlattr* tb[TCA_MAX + 1];
        ASSERT_EQ(nlmsg_parse(h, sizeof(tcmsg), tb, TCA_MAX, nullptr), 0);
        ASSERT_TRUE(tb[TCA_KIND]);
        EXPECT_STREQ(nla_get_string(tb[TCA_KIND]), "htb");
        nlattr* htb[TCA_HTB_MAX + 1];
        ASSERT_EQ(nla_parse_nested(htb, TCA_HTB_MAX, tb[TCA_OPTIONS], nullptr), 0);
        ASSERT_TRUE(htb[TCA_HTB_PARMS]);
        tc_htb_opt opt{};
        nla_memcpy(&opt, htb[TCA_HTB_PARMS], sizeof opt);
        EXPECT_EQ(opt.prio, 2u);
        EXPECT_EQ(opt.quantum, op.htb.quantum);
        EXPECT_EQ(opt.rate.linklayer, TC_LINKLAYER_ETHERNET);
        EXPECT_EQ(opt.buffer, htb_buffer_ticks(op.htb.burst, c.rate));
        EXPECT_EQ(static_cast<bool>(htb[TCA_HTB_RATE64]), c.rate64);
        EXPECT_EQ(static_cast<bool>(htb[TCA_HTB_CEIL64]), c.ceil64);
        if (c.rate64) {
            EXPECT_EQ(nla_get_u64(htb[TCA_HTB_RATE64]), c.rate / 8);
            EXPECT_EQ(opt.rate.rate, 0xffffffffu);
        } else {
            EXPECT_EQ(opt.rate.rate, c.rate / 8);
        }
        if (c.ceil64) {
            EXPECT_EQ(nla_get_u64(htb[TCA_HTB_CEIL64]), c.ceil / 8);
            EXPECT_EQ(opt.ceil.rate, 0xffffffffu);
        } else {
            EXPECT_EQ(opt.ceil.rate, c.ceil / 8);
        }
    }
}

TEST(Plan, MinorAllocationPrefersJobIdWrapsAndReuses) {
    std::set<uint16_t> taken;
    auto is_taken = [&](uint16_t m) { return taken.count(m) > 0; };
    EXPECT_EQ(*allocate_minor(7, 0x1a4e, is_taken), 7);
    taken.insert(7);
    EXPECT_EQ(*allocate_minor(7, 0x1a4e, is_taken), 8);            // next free after it
    EXPECT_EQ(*allocate_minor(0x1a4e, 0x1a4e, is_taken), 0x1a4f);  // never the root major
    EXPECT_EQ(*allocate_minor(0xfffd, 0x1a4e, is_taken), 0xfffd);
    taken.insert(0xfffd);
    EXPECT_EQ(*allocate_minor(0xfffd, 0x1a4e, is_taken), 2);  // wraps past 0xfffd to 2
    EXPECT_EQ(*allocate_minor(0, 0x1a4e, is_taken), 2);
    EXPECT_EQ(*allocate_minor(1, 0x1a4e, is_taken), 3);
    // 32-bit job ids land in range.
    for (uint32_t job : {65534u, 65535u, 70000u, 4000000000u}) {
        auto m = allocate_minor(job, 0x1a4e, is_taken);
        ASSERT_TRUE(m);
        EXPECT_GE(*m, kFirstJobMinor);
        EXPECT_LE(*m, kLastJobMinor);
    }
    taken.erase(7);
    EXPECT_EQ(*allocate_minor(7, 0x1a4e, is_taken), 7);  // reused once free
    auto full = allocate_minor(9, 0x1a4e, [](uint16_t) { return true; });
    ASSERT_FALSE(full);
    EXPECT_NE(full.error().message.find("JobId=9"), std::string::npos);
    // Only the root major free: still refused.
    EXPECT_FALSE(allocate_minor(9, 0x1a4e, [](uint16_t m) { return m != 0x1a4e; }));
}

struct NftMsg {
    int type;  // NFT_MSG_* or the batch markers
    nlmsghdr* hdr;
};

std::vector<NftMsg> split_batch(std::vector<uint8_t>& bytes) {
    std::vector<NftMsg> out;
    int len = static_cast<int>(bytes.size());
    for (auto* h = reinterpret_cast<nlmsghdr*>(bytes.data()); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
        int type = h->nlmsg_type;
        if ((type >> 8) == NFNL_SUBSYS_NFTABLES) type &= 0xff;
        out.push_back({type, h});
    }
    return out;
}

std::vector<int> types(const std::vector<NftMsg>& msgs) {
    std::vector<int> t;
    for (const auto& m : msgs) t.push_back(m.type);
    return t;
}

// Bytes of NFTA_DATA_VALUE inside a nested data attribute.
std::vector<uint8_t> data_value(nlattr* nested) {
    nlattr* tb[NFTA_DATA_MAX + 1];
    if (nla_parse_nested(tb, NFTA_DATA_MAX, nested, nullptr) != 0 || !tb[NFTA_DATA_VALUE]) return {};
    auto* p = static_cast<uint8_t*>(nla_data(tb[NFTA_DATA_VALUE]));
    return std::vector<uint8_t>(p, p + nla_len(tb[NFTA_DATA_VALUE]));
}

// The elements of one NEWSETELEM/DELSETELEM message: set name, (key, data) pairs.
struct Elems {
    std::string set;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> items;
};
Elems elements_of(nlmsghdr* h) {
    Elems out;
    nlattr* tb[NFTA_SET_ELEM_LIST_MAX + 1];
    if (nlmsg_parse(h, sizeof(nfgenmsg), tb, NFTA_SET_ELEM_LIST_MAX, nullptr) != 0) return out;
    EXPECT_STREQ(nla_get_string(tb[NFTA_SET_ELEM_LIST_TABLE]), "lanes");
    out.set = nla_get_string(tb[NFTA_SET_ELEM_LIST_SET]);
    nlattr* e;
    int rem;
    nla_for_each_nested(e, tb[NFTA_SET_ELEM_LIST_ELEMENTS], rem) {
        nlattr* el[NFTA_SET_ELEM_MAX + 1];
        if (nla_parse_nested(el, NFTA_SET_ELEM_MAX, e, nullptr) != 0) continue;
        auto key = data_value(el[NFTA_SET_ELEM_KEY]);
        uint64_t id = 0;
        if (key.size() == 8) std::memcpy(&id, key.data(), 8);
        out.items.emplace_back(id,
                               el[NFTA_SET_ELEM_DATA] ? data_value(el[NFTA_SET_ELEM_DATA]) : std::vector<uint8_t>{});
    }
    return out;
}

TEST(Plan, NftAddJobIsTwoElementsInOneTransactionNoChains) {
    NftEnsureJob add{7, "lanes/job_7", tc_handle(0x1a4e, 7), 34, 0x1122334455667788ull, 2};
    auto bytes = nft_add_job_batch(add, 100);
    auto msgs = split_batch(bytes);
    // No chain, no rule, no verdict: nothing the kernel re-validates per job.
    EXPECT_EQ(types(msgs),
              (std::vector<int>{NFNL_MSG_BATCH_BEGIN, NFT_MSG_NEWSETELEM, NFT_MSG_NEWSETELEM, NFNL_MSG_BATCH_END}));
    for (std::size_t i = 0; i < msgs.size(); ++i) EXPECT_EQ(msgs[i].hdr->nlmsg_seq, 100 + i);
    EXPECT_FALSE(msgs[1].hdr->nlmsg_flags & NLM_F_ACK);   // errors are reported anyway
    EXPECT_TRUE(msgs[2].hdr->nlmsg_flags & NLM_F_ACK);    // the last one ends the exchange
    EXPECT_FALSE(msgs[1].hdr->nlmsg_flags & NLM_F_EXCL);  // the same element again is fine

    auto prio = elements_of(msgs[1].hdr);
    EXPECT_EQ(prio.set, "prio");
    ASSERT_EQ(prio.items.size(), 1u);
    EXPECT_EQ(prio.items[0].first, 0x1122334455667788ull);  // host order, as nft keys cgroupsv2
    ASSERT_EQ(prio.items[0].second.size(), 4u);
    uint32_t p = 0;
    std::memcpy(&p, prio.items[0].second.data(), 4);
    EXPECT_EQ(p, 0x1a4e0007u);  // host order: skb->priority
    auto dscp = elements_of(msgs[2].hdr);
    EXPECT_EQ(dscp.set, "dscp_34");
    ASSERT_EQ(dscp.items.size(), 1u);
    EXPECT_EQ(dscp.items[0].first, 0x1122334455667788ull);
    EXPECT_TRUE(dscp.items[0].second.empty());

    add.dscp.reset();  // no DSCP of its own: only the priority; the unclassified DSCP applies
    auto plain = nft_add_job_batch(add, 1);
    EXPECT_EQ(types(split_batch(plain)),
              (std::vector<int>{NFNL_MSG_BATCH_BEGIN, NFT_MSG_NEWSETELEM, NFNL_MSG_BATCH_END}));
}

TEST(Plan, NftRebuildOfThousandsOfJobsIsOneTransactionOfWellFormedMessages) {
    std::vector<NftEnsureJob> jobs;
    for (uint32_t j = 0; j < 2000; ++j)
        jobs.push_back(NftEnsureJob{j, "lanes/job_" + std::to_string(j), tc_handle(0x1a4e, 2 + j % 100),
                                    j % 3 ? std::optional<uint8_t>(8) : std::nullopt, 1000 + j, 2});
    auto bytes = nft_add_jobs_batch(jobs, 1);
    auto msgs = split_batch(bytes);
    ASSERT_GE(msgs.size(), 4u);
    EXPECT_EQ(msgs.front().hdr->nlmsg_type, NFNL_MSG_BATCH_BEGIN);
    EXPECT_EQ(msgs.back().hdr->nlmsg_type, NFNL_MSG_BATCH_END);
    std::map<std::string, std::size_t> per_set;
    for (std::size_t i = 1; i + 1 < msgs.size(); ++i) {
        auto e = elements_of(msgs[i].hdr);
        per_set[e.set] += e.items.size();
        EXPECT_LE(msgs[i].hdr->nlmsg_len, 4096u);
    }
    EXPECT_EQ(per_set["prio"], 2000u);
    EXPECT_EQ(per_set["dscp_8"], 1333u);
    EXPECT_EQ(per_set.size(), 2u);
}

TEST(Plan, NftRemoveJobDeletesTheElementsByCgroupId) {
    NftRemoveJob rm{7, 1234, 10};
    auto bytes = nft_remove_job_batch(rm, 1);
    auto msgs = split_batch(bytes);
    EXPECT_EQ(types(msgs),
              (std::vector<int>{NFNL_MSG_BATCH_BEGIN, NFT_MSG_DELSETELEM, NFT_MSG_DELSETELEM, NFNL_MSG_BATCH_END}));
    EXPECT_EQ(elements_of(msgs[1].hdr).set, "prio");
    EXPECT_EQ(elements_of(msgs[1].hdr).items[0].first, 1234u);
    EXPECT_EQ(elements_of(msgs[2].hdr).set, "dscp_10");
}

TEST(Plan, NftBaseScriptUnclassifiedFirstThenLevelsAndDscpSets) {
    MarkerBase b;
    b.levels = {2, 3};
    b.dscps = {8, 34};
    b.unclassified = 0;
    std::string base = nft_base_script(b);
    EXPECT_NE(base.find("add map inet lanes prio { type cgroupsv2 : classid; }"), std::string::npos);
    EXPECT_NE(base.find("add set inet lanes dscp_34 { type cgroupsv2; }"), std::string::npos);
    EXPECT_NE(base.find("type filter hook output priority mangle"), std::string::npos);
    EXPECT_NE(base.find("flush chain inet lanes out\n"), std::string::npos);
    EXPECT_EQ(base.find("vmap"), std::string::npos);
    EXPECT_EQ(base.find("goto"), std::string::npos);
    auto unclass4 = base.find("meta nfproto ipv4 ip dscp set 0 comment \"lanes:unclassified:d0\"");
    auto unclass6 = base.find("meta nfproto ipv6 ip6 dscp set 0 comment \"lanes:unclassified:d0\"");
    auto prio3 = base.find("meta priority set socket cgroupv2 level 3 map @prio comment \"lanes:l3\"");
    auto d34 = base.find("meta nfproto ipv4 socket cgroupv2 level 2 @dscp_34 ip dscp set 34 comment \"lanes:l2:d34\"");
    ASSERT_NE(unclass4, std::string::npos);
    ASSERT_NE(unclass6, std::string::npos);
    ASSERT_NE(prio3, std::string::npos);
    ASSERT_NE(d34, std::string::npos);
    EXPECT_LT(unclass6, prio3);  // everything is re-marked first, jobs after
    EXPECT_LT(unclass6, d34);
    EXPECT_NE(base.find("ip6 dscp set 8 comment \"lanes:l3:d8\""), std::string::npos);

    // The comments read back into the base they describe.
    MarkerBase back;
    for (std::size_t at = base.find("comment \""); at != std::string::npos; at = base.find("comment \"", at + 1)) {
        std::size_t from = at + 9, to = base.find('"', from);
        EXPECT_TRUE(nft_parse_rule_comment(base.substr(from, to - from), back));
    }
    EXPECT_EQ(back, b);
    EXPECT_TRUE(back.covers(b));
    MarkerBase more = b;
    more.dscps.insert(46);
    EXPECT_FALSE(back.covers(more));
    more = b;
    more.unclassified.reset();  // "keep": no rewrite rules
    EXPECT_FALSE(back.covers(more));
    EXPECT_EQ(nft_base_script(more).find("lanes:unclassified"), std::string::npos);
    EXPECT_FALSE(nft_parse_rule_comment("someone else's", back));
    EXPECT_FALSE(nft_parse_rule_comment("lanes:l2:d64", back));
    EXPECT_EQ(nft_priority(tc_handle(0x1a4e, 0xfffe)), "1a4e:fffe");
}

TEST(Plan, UnclassifiedClassIsCappedAsConfigured) {
    NodeConfig config;  // defaults: 5% guaranteed, 25% cap
    auto p = plan_apply(config, facts_for(7, {nic("eth0", 100 * kGbit)}), request(7, bits(kGbit)), 7, {});
    ASSERT_TRUE(p);
    auto roots = ops_of<EnsureRoot>(*p);
    ASSERT_EQ(roots.size(), 1u);
    EXPECT_EQ(roots[0].fallback.rate_bits, 5 * kGbit);
    EXPECT_EQ(roots[0].fallback.ceil_bits, 25 * kGbit);
    EXPECT_EQ(roots[0].fallback.prio, 7u);
    config.unclassified_rate = Rate{2 * kGbit, 0};
    config.unclassified_ceil = Rate{0, 100};
    p = plan_apply(config, facts_for(7, {nic("eth0", 100 * kGbit)}), request(7, bits(kGbit)), 7, {});
    roots = ops_of<EnsureRoot>(*p);
    EXPECT_EQ(roots[0].fallback.rate_bits, 2 * kGbit);
    EXPECT_EQ(roots[0].fallback.ceil_bits, 100 * kGbit);
}

TEST(Plan, StateKeepsWhatTeardownNeeds) {
    NodeConfig config;
    config.root_handle_major = 0x1b00;
    auto p = plan_apply(config, facts_for(7, {nic("eth0", 25 * kGbit)}), request(7, bits(kGbit), {}, 10), 7, {});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->state.root_major, 0x1b00);
    EXPECT_EQ(p->state.dscp_marked, std::optional<uint8_t>(10));
    // The epilog runs with another root_handle configured: the state's wins.
    auto r = plan_remove(p->state, 0x1a4e);
    auto del = ops_of<DeleteClass>(r);
    ASSERT_EQ(del.size(), 1u);
    EXPECT_EQ(del[0].classid, tc_handle(0x1b00, 7));
    auto nft = ops_of<NftRemoveJob>(r);
    ASSERT_EQ(nft.size(), 1u);
    EXPECT_EQ(nft[0].dscp, std::optional<uint8_t>(10));
    // A re-apply that changes the DSCP first removes the old element.
    auto again = plan_apply(config, facts_for(7, {nic("eth0", 25 * kGbit)}), request(7, bits(kGbit), {}, 34), 7, [&] {
        JobState s = p->state;
        s.cgroup_id = 99;
        return s;
    }());
    ASSERT_TRUE(again);
    ASSERT_TRUE(std::holds_alternative<NftRemoveJob>(again->operations.front()));
    EXPECT_EQ(std::get<NftRemoveJob>(again->operations.front()).dscp, std::optional<uint8_t>(10));
}

}  // namespace
}  // namespace lanes
