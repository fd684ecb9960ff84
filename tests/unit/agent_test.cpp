// SPDX-License-Identifier: GPL-2.0-or-later
// lanes-agent's pure parts: which netlink notifications say "look again", the
// metrics text (HELP/TYPE, escaping), the status file lanesctl status reads,
// and the [agent] table of lanes.toml.
#include <gtest/gtest.h>
#include <linux/fib_rules.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>
#include <set>
#include <sstream>
#include <vector>

#include "agent/agent_metrics.hpp"
#include "agent/kernel_events.hpp"
#include "core/lanes_toml.hpp"
#include "lanesctl/agent_status.hpp"
#include "node/path_plan.hpp"

namespace lanes::agent {
namespace {

// A netlink message: header, fixed payload, then one string attribute of `type`.
std::vector<char> message(uint16_t nlmsg_type, const void* payload, std::size_t len, uint16_t attr_type,
                          const std::string& attr) {
    const std::size_t attr_len = NLA_HDRLEN + attr.size() + 1;
    std::vector<char> buf(NLMSG_HDRLEN + NLMSG_ALIGN(len) + NLA_ALIGN(attr_len), 0);
    auto* h = reinterpret_cast<nlmsghdr*>(buf.data());
    h->nlmsg_len = static_cast<uint32_t>(buf.size());
    h->nlmsg_type = nlmsg_type;
    std::memcpy(buf.data() + NLMSG_HDRLEN, payload, len);
    auto* a = reinterpret_cast<nlattr*>(buf.data() + NLMSG_HDRLEN + NLMSG_ALIGN(len));
    a->nla_len = static_cast<uint16_t>(attr_len);
    a->nla_type = attr_type;
    std::memcpy(reinterpret_cast<char*>(a) + NLA_HDRLEN, attr.c_str(), attr.size() + 1);
    return buf;
}

const nlmsghdr* hdr(const std::vector<char>& b) { return reinterpret_cast<const nlmsghdr*>(b.data()); }

TEST(AgentEvents, RouteMessagesOfManagedNicsOnly) {
    WatchedDevices w{{7}, {"eth0"}};
    tcmsg t{};
    t.tcm_ifindex = 7;
    EXPECT_EQ(classify_route_message(hdr(message(RTM_DELQDISC, &t, sizeof t, TCA_KIND, "htb")), w), KernelEvent::Tc);
    EXPECT_EQ(classify_route_message(hdr(message(RTM_NEWTCLASS, &t, sizeof t, TCA_KIND, "htb")), w), KernelEvent::Tc);
    t.tcm_ifindex = 8;  // another NIC's qdisc
    EXPECT_EQ(classify_route_message(hdr(message(RTM_DELQDISC, &t, sizeof t, TCA_KIND, "htb")), w),
              KernelEvent::Unrelated);
    ifinfomsg ifi{};
    ifi.ifi_index = 7;
    EXPECT_EQ(classify_route_message(hdr(message(RTM_NEWLINK, &ifi, sizeof ifi, IFLA_IFNAME, "eth0")), w),
              KernelEvent::Link);
    ifi.ifi_index = 12;  // recreated or renamed to a managed name: new index, same name
    EXPECT_EQ(classify_route_message(hdr(message(RTM_NEWLINK, &ifi, sizeof ifi, IFLA_IFNAME, "eth0")), w),
              KernelEvent::Link);
    EXPECT_EQ(classify_route_message(hdr(message(RTM_NEWLINK, &ifi, sizeof ifi, IFLA_IFNAME, "veth9")), w),
              KernelEvent::Unrelated);
    EXPECT_EQ(classify_route_message(hdr(message(RTM_NEWROUTE, &ifi, sizeof ifi, 1, "x")), w), KernelEvent::Unrelated);
}

// The same with one u32 attribute.
std::vector<char> message_u32(uint16_t nlmsg_type, const void* payload, std::size_t len, uint16_t attr_type,
                              uint32_t value) {
    std::vector<char> buf(NLMSG_HDRLEN + NLMSG_ALIGN(len) + NLA_HDRLEN + sizeof value, 0);
    auto* h = reinterpret_cast<nlmsghdr*>(buf.data());
    h->nlmsg_len = static_cast<uint32_t>(buf.size());
    h->nlmsg_type = nlmsg_type;
    std::memcpy(buf.data() + NLMSG_HDRLEN, payload, len);
    auto* a = reinterpret_cast<nlattr*>(buf.data() + NLMSG_HDRLEN + NLMSG_ALIGN(len));
    a->nla_len = static_cast<uint16_t>(NLA_HDRLEN + sizeof value);
    a->nla_type = attr_type;
    std::memcpy(reinterpret_cast<char*>(a) + NLA_HDRLEN, &value, sizeof value);
    return buf;
}

TEST(AgentEvents, PathRulesAndRoutesOfLanesTablesOnly) {
    WatchedDevices w{{7}, {"eth0"}};
    fib_rule_hdr rule{};
    rule.family = AF_INET6;
    EXPECT_EQ(
        classify_route_message(hdr(message_u32(RTM_DELRULE, &rule, sizeof rule, FRA_PRIORITY, kPathRulePriority)), w),
        KernelEvent::Path);
    EXPECT_EQ(classify_route_message(hdr(message_u32(RTM_NEWRULE, &rule, sizeof rule, FRA_PRIORITY, 32766)), w),
              KernelEvent::Unrelated);
    rtmsg rt{};
    rt.rtm_table = RT_TABLE_COMPAT;
    EXPECT_EQ(
        classify_route_message(hdr(message_u32(RTM_DELROUTE, &rt, sizeof rt, RTA_TABLE, kPathMarkBase | 0x12ab)), w),
        KernelEvent::Path);
    EXPECT_EQ(classify_route_message(hdr(message_u32(RTM_DELROUTE, &rt, sizeof rt, RTA_TABLE, 100)), w),
              KernelEvent::Unrelated);
    // The paths' nft table wakes the agent too.
    nfgenmsg g{};
    g.nfgen_family = NFPROTO_INET;
    const uint16_t delelem = static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELSETELEM);
    EXPECT_EQ(
        classify_nft_message(hdr(message(delelem, &g, sizeof g, NFTA_SET_ELEM_LIST_TABLE, kPathNftTable)), "lanes", {}),
        KernelEvent::Path);
}

TEST(AgentEvents, NftMessagesOfOurTableOnly) {
    nfgenmsg g{};
    g.nfgen_family = NFPROTO_INET;
    const auto type = [](int msg) { return static_cast<uint16_t>((NFNL_SUBSYS_NFTABLES << 8) | msg); };
    EXPECT_EQ(
        classify_nft_message(hdr(message(type(NFT_MSG_DELTABLE), &g, sizeof g, NFTA_TABLE_NAME, "lanes")), "lanes", {}),
        KernelEvent::Nft);
    EXPECT_EQ(classify_nft_message(
                  hdr(message(type(NFT_MSG_DELSETELEM), &g, sizeof g, NFTA_SET_ELEM_LIST_TABLE, "lanes")), "lanes", {}),
              KernelEvent::Nft);
    EXPECT_EQ(
        classify_nft_message(hdr(message(type(NFT_MSG_NEWRULE), &g, sizeof g, NFTA_RULE_TABLE, "filter")), "lanes", {}),
        KernelEvent::Unrelated);
    // Every transaction ends with NEWGEN: not a change of ours.
    EXPECT_EQ(classify_nft_message(hdr(message(type(NFT_MSG_NEWGEN), &g, sizeof g, NFTA_GEN_ID, "lanes")), "lanes", {}),
              KernelEvent::Unrelated);
    // The ingress caps' netdev table is ours too; another netdev table is not.
    g.nfgen_family = NFPROTO_NETDEV;
    EXPECT_EQ(classify_nft_message(hdr(message(type(NFT_MSG_DELTABLE), &g, sizeof g, NFTA_TABLE_NAME, "lanes_in")),
                                   "lanes", {}),
              KernelEvent::Nft);
    EXPECT_EQ(
        classify_nft_message(hdr(message(type(NFT_MSG_DELTABLE), &g, sizeof g, NFTA_TABLE_NAME, "lanes")), "lanes", {}),
        KernelEvent::Unrelated);
    g.nfgen_family = NFPROTO_IPV4;  // an ip table of the same name is not ours
    EXPECT_EQ(
        classify_nft_message(hdr(message(type(NFT_MSG_DELTABLE), &g, sizeof g, NFTA_TABLE_NAME, "lanes")), "lanes", {}),
        KernelEvent::Unrelated);
}

TEST(AgentMetrics, EveryMetricHasHelpAndTypeAndLabelsAreEscaped) {
    AgentCounters c;
    c.repairs[{"class", "missing"}] = 3;
    c.repairs[{"nft_table", "missing"}] = 1;
    c.converges["event"] = 4;
    c.events["nft"] = 9;
    c.shifts[{"tr\"ain\\ing\n", "busy"}] = 2;
    c.errors["converge"] = 1;
    c.ceil_changes[{"training", "over_slo"}] = 2;
    c.ceil_decisions["training"] = 9;
    c.ceil_bits[{"training", "eth0"}] = 47'000'000;
    const std::string text = metrics_text(c, nullptr);
    EXPECT_NE(text.find("lanes_agent_ceil_changes_total{class=\"training\",cause=\"over_slo\"} 2\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("lanes_agent_ceil_decisions_total{class=\"training\"} 9\n"), std::string::npos) << text;
    EXPECT_NE(text.find("lanes_agent_ceil_bytes_per_second{class=\"training\",device=\"eth0\"} 5875000\n"),
              std::string::npos)
        << text;
    // With the node's name, the gauge carries host= like the per-job series.
    c.host = "gpu1";
    EXPECT_NE(
        metrics_text(c, nullptr)
            .find("lanes_agent_ceil_bytes_per_second{class=\"training\",device=\"eth0\",host=\"gpu1\"} 5875000\n"),
        std::string::npos);
    EXPECT_NE(text.find("lanes_agent_repairs_total{object=\"class\",cause=\"missing\"} 3\n"), std::string::npos)
        << text;
    EXPECT_NE(text.find("lanes_agent_shifts_total{class=\"tr\\\"ain\\\\ing\\n\",to=\"busy\"} 2\n"), std::string::npos)
        << text;
    // Every sample's metric name has a HELP and a TYPE line before it.
    std::set<std::string> helped, typed;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# HELP ", 0) == 0) helped.insert(line.substr(7, line.find(' ', 7) - 7));
        else if (line.rfind("# TYPE ", 0) == 0) typed.insert(line.substr(7, line.find(' ', 7) - 7));
        else {
            const std::string name = line.substr(0, line.find_first_of("{ "));
            EXPECT_TRUE(helped.count(name)) << name;
            EXPECT_TRUE(typed.count(name)) << name;
        }
    }
    EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

TEST(AgentStatus, RoundTripsThroughTheStatusFile) {
    AgentCounters c;
    c.repairs[{"class", "missing"}] = 2;
    c.repairs[{"nft_table", "missing"}] = 1;
    c.converges["start"] = 1;
    c.converges["event"] = 5;
    c.last_converge_unix = 1796083200.5;
    c.last_success_unix = 1796083200.5;
    c.last_converge_seconds = 0.0004;
    auto s = ctl::parse_agent_status(status_text(c, 812, "1796083200 JobId=21 on eth0 repaired class\n(x)"));
    ASSERT_TRUE(s);
    EXPECT_EQ(s->pid, 812);
    EXPECT_EQ(s->repairs, 3u);
    EXPECT_EQ(s->converges, 6u);
    EXPECT_EQ(s->last_repair, "1796083200 JobId=21 on eth0 repaired class (x)");
    s->running = true;
    const std::string line = ctl::format_agent_status(*s, 1796083202);
    EXPECT_NE(line.find("agent: pid 812 running; last converge 2026-12-01T00:00:00Z (1 s ago, 0.4 ms)"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("6 converges, 3 repairs, 0 errors"), std::string::npos) << line;
    EXPECT_NE(line.find("last repair 2026-12-01T00:00:00Z: JobId=21 on eth0 repaired class (x)"), std::string::npos)
        << line;
    EXPECT_FALSE(ctl::parse_agent_status("no=pid\n"));
}

TEST(AgentConfig, DefaultsAndErrors) {
    auto ok = parse_config("[classes.a]\n", "t.toml");
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_EQ(ok->agent.textfile_dir, "/var/lib/prometheus/node-exporter");
    EXPECT_EQ(ok->agent.resync_interval.count(), 10000);
    EXPECT_EQ(ok->agent.debounce.count(), 5);
    auto set = parse_config(
        "[classes.a]\n[agent]\ntextfile_dir = \"/srv/prom\"\nresync_interval = \"30s\"\ndebounce = \"20ms\"\n",
        "t.toml");
    ASSERT_TRUE(set) << set.error().message;
    EXPECT_EQ(set->agent.textfile_dir, "/srv/prom");
    EXPECT_EQ(set->agent.resync_interval.count(), 30000);
    EXPECT_EQ(set->agent.debounce.count(), 20);
    auto bad = parse_config("[classes.a]\n[agent]\ntextfile_dir = \"rel\"\nresync = \"1s\"\n", "t.toml");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("t.toml:3:16: agent.textfile_dir: must be an absolute path"), std::string::npos)
        << bad.error().message;
    EXPECT_NE(bad.error().message.find("agent.resync: unknown key"), std::string::npos) << bad.error().message;
    auto fast = parse_config("[classes.a]\n[agent]\nresync_interval = \"10ms\"\n", "t.toml");
    ASSERT_FALSE(fast);
    EXPECT_NE(fast.error().message.find("agent.resync_interval: out of range (1s..1h)"), std::string::npos)
        << fast.error().message;
}

}  // namespace
}  // namespace lanes::agent
