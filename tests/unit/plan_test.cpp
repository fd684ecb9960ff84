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
#include <set>

#include "node/packet_marker.hpp"
#include "node/shaping_plan.hpp"
#include "node/traffic_control.hpp"

namespace lanes {
namespace {

constexpr uint64_t kGbit = 1'000'000'000ull;

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
    f.cgroup_key = "unified/lanes/job_" + std::to_string(job);
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
        auto p = plan_apply(config, facts_for(job, {nic("eth0", 25 * kGbit)}), request(job, bits(5 * kGbit)), *minor, {});
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
    EXPECT_NE(n7[0].cgroup_key, n8[0].cgroup_key);
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
    EXPECT_EQ(roots[0].fallback.ceil_bits, 25 * kGbit);
    EXPECT_EQ(roots[0].fallback.rate_bits, 25 * kGbit / 10);
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
        {bits(kGbit), {}, kGbit, kGbit},                          // ceil defaults to rate
        {{}, bits(2 * kGbit), 100'000'000, 2 * kGbit},             // rate: 1% floor of the link
        {{}, {}, 100'000'000, 10 * kGbit},                         // no cap: ceil = link
        {bits(20 * kGbit), {}, 10 * kGbit, 10 * kGbit},            // capped at the link
        {bits(3 * kGbit), bits(kGbit), kGbit, kGbit},              // rate above ceil: ceil wins
        {{}, bits(500'000), 500'000, 500'000},                     // floor never above the ceil
        {bits(0), {}, 8000, 8000},                                 // HTB needs rate > 0
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
    for (uint64_t rate : std::initializer_list<uint64_t>{10'000'000, 100'000'000, kGbit, 10 * kGbit, 25 * kGbit, 100 * kGbit, 400 * kGbit}) {
        auto h = htb_params(rate, rate, 3);
        EXPECT_EQ(h.rate_bits, rate);
        EXPECT_GE(h.quantum, 1514u) << rate;
        EXPECT_LE(h.quantum, 1u << 20) << rate;
        EXPECT_GE(h.burst, 2u * 65536) << rate;  // two GSO skbs
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
    EXPECT_EQ(*allocate_minor(7, 0x1a4e, is_taken), 8);           // next free after it
    EXPECT_EQ(*allocate_minor(0x1a4e, 0x1a4e, is_taken), 0x1a4f);  // never the root major
    EXPECT_EQ(*allocate_minor(0xfffd, 0x1a4e, is_taken), 0xfffd);
    taken.insert(0xfffd);
    EXPECT_EQ(*allocate_minor(0xfffd, 0x1a4e, is_taken), 2);       // wraps past 0xfffd to 2
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
    EXPECT_EQ(*allocate_minor(7, 0x1a4e, is_taken), 7);            // reused once free
    auto full = allocate_minor(9, 0x1a4e, [](uint16_t) { return true; });
    ASSERT_FALSE(full);
    EXPECT_NE(full.error().message.find("job 9"), std::string::npos);
    // Only the root major free: still refused.
    EXPECT_FALSE(allocate_minor(9, 0x1a4e, [](uint16_t m) { return m != 0x1a4e; }));
}

struct NftMsg {
    int type;            // NFT_MSG_* or the batch markers
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

// name -> attributes of each expression of a NEWRULE message, in order.
std::vector<std::pair<std::string, nlattr*>> expressions(nlmsghdr* h) {
    std::vector<std::pair<std::string, nlattr*>> out;
    nlattr* tb[NFTA_RULE_MAX + 1];
    if (nlmsg_parse(h, sizeof(nfgenmsg), tb, NFTA_RULE_MAX, nullptr) != 0 || !tb[NFTA_RULE_EXPRESSIONS]) return out;
    nlattr* e;
    int rem;
    nla_for_each_nested(e, tb[NFTA_RULE_EXPRESSIONS], rem) {
        nlattr* x[NFTA_EXPR_MAX + 1];
        if (nla_parse_nested(x, NFTA_EXPR_MAX, e, nullptr) != 0) continue;
        out.emplace_back(nla_get_string(x[NFTA_EXPR_NAME]), x[NFTA_EXPR_DATA]);
    }
    return out;
}

TEST(Plan, NftAddJobBatchIsOneTransactionWithPriorityDscpAndElement) {
    NftEnsureJob add{7, "unified/lanes/job_7", tc_handle(0x1a4e, 7), 34, 0x1122334455667788ull};
    auto bytes = nft_add_job_batch(add, 100);
    auto msgs = split_batch(bytes);
    EXPECT_EQ(types(msgs), (std::vector<int>{NFNL_MSG_BATCH_BEGIN, NFT_MSG_NEWCHAIN, NFT_MSG_DELRULE, NFT_MSG_NEWRULE,
                                             NFT_MSG_NEWRULE, NFT_MSG_NEWRULE, NFT_MSG_NEWSETELEM, NFNL_MSG_BATCH_END}));
    for (std::size_t i = 0; i < msgs.size(); ++i) EXPECT_EQ(msgs[i].hdr->nlmsg_seq, 100 + i);
    for (std::size_t i = 1; i + 1 < msgs.size(); ++i) EXPECT_TRUE(msgs[i].hdr->nlmsg_flags & NLM_F_ACK);
    EXPECT_FALSE(msgs[1].hdr->nlmsg_flags & NLM_F_EXCL);  // an existing chain is fine

    // Rule 1: immediate 1a4e:7 -> meta priority, counter.
    auto r1 = expressions(msgs[3].hdr);
    ASSERT_EQ(r1.size(), 3u);
    EXPECT_EQ(r1[0].first, "immediate");
    nlattr* imm[NFTA_IMMEDIATE_MAX + 1];
    ASSERT_EQ(nla_parse_nested(imm, NFTA_IMMEDIATE_MAX, r1[0].second, nullptr), 0);
    auto prio = data_value(imm[NFTA_IMMEDIATE_DATA]);
    ASSERT_EQ(prio.size(), 4u);
    uint32_t p = 0;
    std::memcpy(&p, prio.data(), 4);
    EXPECT_EQ(p, 0x1a4e0007u);
    EXPECT_EQ(r1[1].first, "meta");
    nlattr* meta[NFTA_META_MAX + 1];
    ASSERT_EQ(nla_parse_nested(meta, NFTA_META_MAX, r1[1].second, nullptr), 0);
    EXPECT_EQ(ntohl(nla_get_u32(meta[NFTA_META_KEY])), static_cast<uint32_t>(NFT_META_PRIORITY));
    EXPECT_EQ(r1[2].first, "counter");

    // Rules 2 and 3: nfproto match, then DSCP 34 (TOS 0x88) written into the first
    // two bytes of the network header; IPv4 with its checksum fixed.
    struct Want {
        uint8_t nfproto;
        std::vector<uint8_t> mask, xr;
        bool csum;
    } want[] = {{NFPROTO_IPV4, {0xff, 0x03}, {0x00, 0x88}, true}, {NFPROTO_IPV6, {0xf0, 0x3f}, {0x08, 0x80}, false}};
    for (int k = 0; k < 2; ++k) {
        auto r = expressions(msgs[4 + k].hdr);
        ASSERT_EQ(r.size(), 5u);
        EXPECT_EQ(r[0].first, "meta");
        EXPECT_EQ(r[1].first, "cmp");
        nlattr* cmp[NFTA_CMP_MAX + 1];
        ASSERT_EQ(nla_parse_nested(cmp, NFTA_CMP_MAX, r[1].second, nullptr), 0);
        EXPECT_EQ(data_value(cmp[NFTA_CMP_DATA]), std::vector<uint8_t>{want[k].nfproto});
        EXPECT_EQ(r[2].first, "payload");
        EXPECT_EQ(r[3].first, "bitwise");
        nlattr* bw[NFTA_BITWISE_MAX + 1];
        ASSERT_EQ(nla_parse_nested(bw, NFTA_BITWISE_MAX, r[3].second, nullptr), 0);
        EXPECT_EQ(data_value(bw[NFTA_BITWISE_MASK]), want[k].mask);
        EXPECT_EQ(data_value(bw[NFTA_BITWISE_XOR]), want[k].xr);
        EXPECT_EQ(r[4].first, "payload");
        nlattr* pw[NFTA_PAYLOAD_MAX + 1];
        ASSERT_EQ(nla_parse_nested(pw, NFTA_PAYLOAD_MAX, r[4].second, nullptr), 0);
        EXPECT_TRUE(pw[NFTA_PAYLOAD_SREG]);
        EXPECT_EQ(static_cast<bool>(pw[NFTA_PAYLOAD_CSUM_TYPE]), want[k].csum);
    }

    // The element: cgroup id (host order) -> goto job_7.
    nlattr* tb[NFTA_SET_ELEM_LIST_MAX + 1];
    ASSERT_EQ(nlmsg_parse(msgs[6].hdr, sizeof(nfgenmsg), tb, NFTA_SET_ELEM_LIST_MAX, nullptr), 0);
    EXPECT_STREQ(nla_get_string(tb[NFTA_SET_ELEM_LIST_TABLE]), "lanes");
    EXPECT_STREQ(nla_get_string(tb[NFTA_SET_ELEM_LIST_SET]), "jobs");
    nlattr* elem = static_cast<nlattr*>(nla_data(tb[NFTA_SET_ELEM_LIST_ELEMENTS]));
    nlattr* el[NFTA_SET_ELEM_MAX + 1];
    ASSERT_EQ(nla_parse_nested(el, NFTA_SET_ELEM_MAX, elem, nullptr), 0);
    auto key = data_value(el[NFTA_SET_ELEM_KEY]);
    ASSERT_EQ(key.size(), 8u);
    uint64_t id = 0;
    std::memcpy(&id, key.data(), 8);
    EXPECT_EQ(id, 0x1122334455667788ull);
    nlattr* d[NFTA_DATA_MAX + 1];
    ASSERT_EQ(nla_parse_nested(d, NFTA_DATA_MAX, el[NFTA_SET_ELEM_DATA], nullptr), 0);
    nlattr* v[NFTA_VERDICT_MAX + 1];
    ASSERT_EQ(nla_parse_nested(v, NFTA_VERDICT_MAX, d[NFTA_DATA_VERDICT], nullptr), 0);
    EXPECT_EQ(static_cast<int32_t>(ntohl(nla_get_u32(v[NFTA_VERDICT_CODE]))), NFT_GOTO);
    EXPECT_STREQ(nla_get_string(v[NFTA_VERDICT_CHAIN]), "job_7");

    add.dscp.reset();
    auto plain = nft_add_job_batch(add, 1);
    EXPECT_EQ(types(split_batch(plain)), (std::vector<int>{NFNL_MSG_BATCH_BEGIN, NFT_MSG_NEWCHAIN, NFT_MSG_DELRULE,
                                                           NFT_MSG_NEWRULE, NFT_MSG_NEWSETELEM, NFNL_MSG_BATCH_END}));
}

TEST(Plan, NftRemoveJobBatchSucceedsWhetherOrNotTheObjectsExist) {
    NftRemoveJob rm{7, "unified/lanes/job_7", 1234};
    auto bytes = nft_remove_job_batch(rm, 1);
    // add-then-delete of element and chain: one transaction, idempotent.
    EXPECT_EQ(types(split_batch(bytes)),
              (std::vector<int>{NFNL_MSG_BATCH_BEGIN, NFT_MSG_NEWCHAIN, NFT_MSG_NEWSETELEM, NFT_MSG_DELSETELEM,
                                NFT_MSG_DELRULE, NFT_MSG_DELCHAIN, NFNL_MSG_BATCH_END}));
    rm.cgroup_id = 0;  // unknown id: only the chain
    auto chain_only = nft_remove_job_batch(rm, 1);
    EXPECT_EQ(types(split_batch(chain_only)), (std::vector<int>{NFNL_MSG_BATCH_BEGIN, NFT_MSG_NEWCHAIN, NFT_MSG_DELRULE,
                                                                NFT_MSG_DELCHAIN, NFNL_MSG_BATCH_END}));
}

TEST(Plan, NftBaseScript) {
    std::string base = nft_base_script({2, 3});
    EXPECT_NE(base.find("add map inet lanes jobs { type cgroupsv2 : verdict; }"), std::string::npos);
    EXPECT_NE(base.find("type filter hook output priority mangle"), std::string::npos);
    EXPECT_NE(base.find("flush chain inet lanes out\n"), std::string::npos);
    EXPECT_NE(base.find("socket cgroupv2 level 2 vmap @jobs\n"), std::string::npos);
    EXPECT_NE(base.find("socket cgroupv2 level 3 vmap @jobs\n"), std::string::npos);
    EXPECT_EQ(nft_priority(tc_handle(0x1a4e, 0xfffe)), "1a4e:fffe");
    EXPECT_EQ(nft_chain_name(4000000000u), "job_4000000000");
}

}  // namespace
}  // namespace lanes
