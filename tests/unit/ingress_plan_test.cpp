// SPDX-License-Identifier: GPL-2.0-or-later
// The pure ingress planner (ingress_plan.hpp): the IFB, its root and the jobs'
// classes, the netdev table and its @jobs elements; stale objects go.
#include <gtest/gtest.h>

#include <algorithm>

#include "node/ingress_plan.hpp"
#include "node/job_state_store.hpp"
#include "tests/unit/job_states.hpp"

namespace lanes {
namespace {

constexpr uint16_t kMajor = 0x1a4e;
constexpr uint64_t kLink = 10'000'000'000ULL;

NicFacts nic(const std::string& dev) {
    NicFacts n;
    n.device = dev;
    n.link_speed_bits = kLink;
    return n;
}

JobState ingress_job(uint32_t id, uint16_t minor, uint64_t rate, uint64_t ceil) {
    JobState st = test::job_state(id, kMajor, minor, {"eth0"});
    JobDevice d;
    d.device = "eth0";
    d.rate_bits = rate;
    d.ceil_bits = ceil;
    st.ingress_devices.push_back(d);
    return st;
}

std::vector<std::string> objects(const IngressPlan& p) {
    std::vector<std::string> out;
    for (const auto& s : p.steps) out.push_back(s.repair.object + " " + s.repair.cause);
    return out;
}

// What the kernel shows once `plan` ran (the IFB with its root, classes and leaves).
IfbObserved after(const IngressPlan& plan, const std::string& ifb) {
    IfbObserved o{ifb, true, true, {}};
    for (const auto& step : plan.steps)
        for (const auto& op : step.operations) {
            const auto* tc = std::get_if<Operation>(&op);
            if (!tc) continue;
            if (const auto* r = std::get_if<EnsureRoot>(tc)) {
                o.tc.root = {"htb", tc_handle(r->major, 0)};
                o.tc.classes.push_back({tc_handle(r->major, 1), tc_handle(r->major, 0), "htb", r->parent.rate_bits,
                                        r->parent.ceil_bits, r->parent.prio, r->parent.quantum});
                o.tc.classes.push_back({tc_handle(r->major, 0xfffe), tc_handle(r->major, 1), "htb",
                                        r->fallback.rate_bits, r->fallback.ceil_bits, r->fallback.prio,
                                        r->fallback.quantum});
            } else if (const auto* c = std::get_if<AddClass>(tc)) {
                o.tc.classes.push_back(
                    {c->classid, c->parent, "htb", c->htb.rate_bits, c->htb.ceil_bits, c->htb.prio, c->htb.quantum});
            } else if (const auto* q = std::get_if<AddLeafQdisc>(tc)) {
                o.tc.qdiscs.push_back({q->handle, q->parent, q->kind});
            }
        }
    return o;
}

TEST(IngressPlan, IfbNameIsDeterministicAndFitsIfnamsiz) {
    EXPECT_EQ(ifb_device_name("eth0"), ifb_device_name("eth0"));
    EXPECT_NE(ifb_device_name("eth0"), ifb_device_name("eth1"));
    EXPECT_EQ(ifb_device_name("enp65s0f0np0").size(), 15u);
    EXPECT_TRUE(ifb_device_name("eth0").starts_with("lanes-ifb"));
}

TEST(IngressPlan, ResolvesIngressCapsPerNic) {
    NetworkDecision net;
    EXPECT_TRUE(resolve_ingress(net, {nic("eth0")}).empty());
    net.ingress_rate = Rate{0, 10};
    net.ingress_ceil = Rate{5'000'000'000ULL, 0};
    auto devs = resolve_ingress(net, {nic("eth0"), nic("eth1")});
    ASSERT_EQ(devs.size(), 2u);
    EXPECT_EQ(devs[0].rate_bits, 1'000'000'000ULL);  // 10% of the link
    EXPECT_EQ(devs[0].ceil_bits, 5'000'000'000ULL);
    EXPECT_EQ(devs[1].device, "eth1");
}

TEST(IngressPlan, FirstJobMakesEverythingAndASecondRunNothing) {
    const std::vector<JobState> jobs = {ingress_job(7, 7, 10'000'000, 50'000'000)};
    const std::string ifb = ifb_device_name("eth0");
    IngressPlan p = plan_ingress(jobs, {nic("eth0")}, {IfbObserved{ifb}}, {}, "fq_codel");
    EXPECT_EQ(objects(p), (std::vector<std::string>{"ifb missing", "ifb_root missing", "ifb_class missing",
                                                    "nft_ingress missing", "nft_ingress_job missing"}));
    const auto* cls = std::get_if<AddClass>(&std::get<Operation>(p.steps[2].operations[0]));
    ASSERT_NE(cls, nullptr);
    EXPECT_EQ(cls->device, ifb);
    EXPECT_EQ(cls->classid, tc_handle(kMajor, 7));
    EXPECT_EQ(cls->htb.ceil_bits, 50'000'000u);
    EXPECT_EQ(std::get<NftIngressBase>(p.steps[3].operations[0]).nics, std::vector<std::string>{"eth0"});
    EXPECT_EQ(std::get<NftIngressJobs>(p.steps[4].operations[0]).add, std::vector<uint32_t>{tc_handle(kMajor, 7)});

    IngressNftObserved nft{true, {"eth0"}, {tc_handle(kMajor, 7)}};
    IngressPlan again = plan_ingress(jobs, {nic("eth0")}, {after(p, ifb)}, nft, "fq_codel");
    EXPECT_TRUE(again.steps.empty()) << objects(again).front();
}

TEST(IngressPlan, RepairsADeletedOrChangedClass) {
    const std::vector<JobState> jobs = {ingress_job(7, 7, 10'000'000, 50'000'000),
                                        ingress_job(8, 8, 10'000'000, 80'000'000)};
    const std::string ifb = ifb_device_name("eth0");
    IfbObserved seen = after(plan_ingress(jobs, {nic("eth0")}, {IfbObserved{ifb}}, {}, "fq_codel"), ifb);
    IngressNftObserved nft{true, {"eth0"}, {tc_handle(kMajor, 7), tc_handle(kMajor, 8)}};
    std::erase_if(seen.tc.classes, [](const ObservedClass& c) { return c.classid == tc_handle(kMajor, 7); });
    for (auto& c : seen.tc.classes)
        if (c.classid == tc_handle(kMajor, 8)) c.ceil_bits = 900'000'000;
    IngressPlan p = plan_ingress(jobs, {nic("eth0")}, {seen}, nft, "fq_codel");
    ASSERT_EQ(objects(p), (std::vector<std::string>{"ifb_class missing", "ifb_class changed"}));
    EXPECT_EQ(p.steps[0].repair.job_id, 7u);
    EXPECT_EQ(p.steps[1].repair.job_id, 8u);
    EXPECT_EQ(std::get<AddClass>(std::get<Operation>(p.steps[1].operations[0])).htb.ceil_bits, 80'000'000u);
}

TEST(IngressPlan, EndedJobsClassGoesAndTheLastTakesTheIfbAndTable) {
    const std::vector<JobState> both = {ingress_job(7, 7, 10'000'000, 50'000'000),
                                        ingress_job(8, 8, 10'000'000, 80'000'000)};
    const std::string ifb = ifb_device_name("eth0");
    IfbObserved seen = after(plan_ingress(both, {nic("eth0")}, {IfbObserved{ifb}}, {}, "pfifo"), ifb);
    IngressNftObserved nft{true, {"eth0"}, {tc_handle(kMajor, 7), tc_handle(kMajor, 8)}};
    // Job 7 ended: its class and element go, job 8 keeps its own.
    IngressPlan p = plan_ingress({both[1]}, {nic("eth0")}, {seen}, nft, "pfifo");
    ASSERT_EQ(objects(p), (std::vector<std::string>{"ifb_class stale", "nft_ingress_job stale"}));
    EXPECT_EQ(std::get<DeleteClass>(std::get<Operation>(p.steps[0].operations[0])).classid, tc_handle(kMajor, 7));
    EXPECT_EQ(std::get<NftIngressJobs>(p.steps[1].operations[0]).remove, std::vector<uint32_t>{tc_handle(kMajor, 7)});
    // No job with an ingress cap left (a job without one stays): table and IFB go.
    JobState egress_only = test::job_state(9, kMajor, 9, {"eth0"});
    IngressPlan last = plan_ingress({egress_only}, {nic("eth0")}, {seen}, nft, "pfifo");
    ASSERT_EQ(objects(last), (std::vector<std::string>{"nft_ingress stale", "ifb stale"}));
    EXPECT_TRUE(std::get<NftIngressBase>(last.steps[0].operations[0]).nics.empty());
    EXPECT_EQ(std::get<DeleteIfb>(last.steps[1].operations[0]).ifb, ifb);
}

TEST(IngressPlan, ChainsOfANicNoLongerSelectedAreRebuilt) {
    const std::vector<JobState> jobs = {ingress_job(7, 7, 10'000'000, 50'000'000)};
    const std::string ifb = ifb_device_name("eth0");
    IfbObserved seen = after(plan_ingress(jobs, {nic("eth0")}, {IfbObserved{ifb}}, {}, "pfifo"), ifb);
    IngressNftObserved nft{true, {"eth0", "?abcdef"}, {tc_handle(kMajor, 7)}};
    IngressPlan p = plan_ingress(jobs, {nic("eth0")}, {seen}, nft, "pfifo");
    // The rebuilt table's @jobs is empty: the jobs' elements go back in with it.
    ASSERT_EQ(objects(p), (std::vector<std::string>{"nft_ingress changed", "nft_ingress_job missing"}));
    EXPECT_EQ(std::get<NftIngressJobs>(p.steps[1].operations[0]).add, std::vector<uint32_t>{tc_handle(kMajor, 7)});
}

TEST(IngressPlan, NftScripts) {
    const std::string base = nft_ingress_base_script({"eth0"}, false);
    EXPECT_EQ(base.find("delete table"), std::string::npos);
    EXPECT_NE(base.find("type filter hook egress device \"eth0\""), std::string::npos) << base;
    EXPECT_NE(base.find("meta priority @jobs update @flows4 { ip daddr . th dport . ip saddr . th sport : meta "
                        "priority }"),
              std::string::npos)
        << base;
    EXPECT_NE(base.find("map @flows4 fwd to \"" + ifb_device_name("eth0") + "\""), std::string::npos) << base;
    EXPECT_NE(base.find("meta priority set th sport . th dport . @nh,128,64 map @flows6 fwd to"), std::string::npos)
        << base;
    EXPECT_EQ(nft_ingress_base_script({}, true), "delete table netdev lanes_in\n");
    EXPECT_EQ(nft_ingress_jobs_script(NftIngressJobs{{tc_handle(kMajor, 7)}, {tc_handle(kMajor, 0x10)}}),
              "delete element netdev lanes_in jobs { 1a4e:10 }\nadd element netdev lanes_in jobs { 1a4e:7 }\n");
}

TEST(IngressPlan, StateFileKeepsIngressCaps) {
    JobState st = ingress_job(7, 7, 10'000'000, 50'000'000);
    st.class_name = "training";
    st.net.ingress_rate = Rate{10'000'000, 0};
    st.net.ingress_ceil = Rate{0, 50};
    auto back = parse_job_state(format_job_state(st), "job_7");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->ingress_devices, st.ingress_devices);
    EXPECT_EQ(back->net.ingress_ceil, st.net.ingress_ceil);
}

TEST(IngressPlan, ChainsCarryTheIndexesTheyWereBoundTo) {
    const std::string base = nft_ingress_base_script({"eth0"}, false, {{"eth0", IngressBinding{5, 9}}});
    EXPECT_NE(base.find("fwd to \"" + ifb_device_name("eth0") + "\" comment \"lanes: NIC ifindex 5, IFB ifindex 9\""),
              std::string::npos)
        << base;
    EXPECT_NE(base.find("sport : meta priority } comment \"lanes: NIC ifindex 5, IFB ifindex 9\""), std::string::npos)
        << base;
    // As `nft list chain` prints a rule with a comment.
    const std::string listed =
        "table netdev lanes_in {\n\tchain in_abcdef {\n\t\ttype filter hook ingress device \"eth0\" priority filter; "
        "policy accept;\n\t\tmeta priority set ip saddr . th sport . ip daddr . th dport map @flows4 fwd to "
        "\"lanes-ifbabcdef\" comment \"lanes: NIC ifindex 5, IFB ifindex 9\"\n\t}\n}\n";
    EXPECT_EQ(ingress_chain_binding(listed), (IngressBinding{5, 9}));
    EXPECT_EQ(ingress_chain_binding("chain in_abcdef { fwd to \"lanes-ifbabcdef\" }"), std::nullopt);
    EXPECT_EQ(ingress_chain_binding("comment \"lanes: NIC ifindex 99999999999, IFB ifindex 9\""), std::nullopt);
}

}  // namespace
}  // namespace lanes
