// SPDX-License-Identifier: GPL-2.0-or-later
// A path per class: the lanes.toml keys, marks, records and the repair plan.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <map>
#include <string>

#include "core/lanes_toml.hpp"
#include "core/toml_paths.hpp"
#include "lanesctl/check_report.hpp"
#include "lanesctl/node_report.hpp"
#include "node/path_plan.hpp"
#include "node/task_env.hpp"

namespace {

using namespace lanes;

std::string first_error(const std::string& text) {
    auto c = parse_config(text, "lanes.toml");
    if (c) return "";
    return c.error().message;
}

#define HEAD "default_class = \"a\"\n[classes.a]\ndscp = \"CS1\"\n"

TEST(ClassPathConfig, ReadsTableDeviceAndVlan) {
    auto c = parse_config(HEAD
                          "route_table = 100\n"
                          "[classes.b]\nrate = \"1Gbit\"\negress_device = \"eth1\"\nvlan = 200\n"
                          "nccl_ib_hca = \"mlx5_1\"\nrdma_gid_index = 3\n"
                          "[classes.c]\nrate = \"1Gbit\"\nroute_table = \"bulk\"\n"
                          "[classes.d]\nrate = \"1Gbit\"\n",
                          "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    ASSERT_TRUE(c->classes.at("a").path);
    EXPECT_EQ(c->classes.at("a").path->table, 100u);
    const ClassPath& b = *c->classes.at("b").path;
    EXPECT_EQ(b.device, "eth1");
    EXPECT_EQ(b.vlan, 200);
    EXPECT_EQ(b.link(), "eth1.200");
    EXPECT_EQ(b.nccl_ib_hca, "mlx5_1");
    EXPECT_EQ(b.rdma_gid_index, 3);
    EXPECT_EQ(c->classes.at("c").path->table_name, "bulk");
    EXPECT_FALSE(c->classes.at("d").path);
}

TEST(ClassPathConfig, MistakesNameTheKey) {
    struct Case {
        std::string toml, message;
    };
    const Case cases[] = {
        {HEAD "route_table = 254\n", "lanes.toml:4:15: classes.a.route_table: table 254 is the kernel's"},
        {HEAD "route_table = 0\n", "lanes.toml:4:15: classes.a.route_table: value 0 is out of range"},
        {HEAD "route_table = \"main\"\n", "classes.a.route_table: table \"main\" is the kernel's own"},
        {HEAD "route_table = \"has space\"\n", "classes.a.route_table: not a table number or a name"},
        {HEAD "route_table = 1280180225\n", "classes.a.route_table: tables 0x4c4e0000..0x4c4effff are Lanes' own"},
        {HEAD "route_table = 100\negress_device = \"eth1\"\n", "classes.a.egress_device: give either"},
        {HEAD "vlan = 10\n", "lanes.toml:4:8: classes.a.vlan: needs \"egress_device\""},
        {HEAD "egress_device = \"eth1\"\nvlan = 4095\n", "classes.a.vlan: value 4095 is out of range (1..4094)"},
        {HEAD "egress_device = \"eth/1\"\n", "classes.a.egress_device: not an interface name"},
        {HEAD "egress_device = \"averyverylongnic\"\n", "classes.a.egress_device: not an interface name"},
        {HEAD "egress_device = \"enp129s0f1np1\"\nvlan = 100\n", "classes.a.vlan: the VLAN interface"},
        {HEAD "rdma_gid_index = 300\n", "classes.a.rdma_gid_index: value 300 is out of range"},
        {"default_class = \"a\"\n[classes.a]\negress_device = \"eth1\"\n",
         "lanes.toml:3:17: classes.a.egress_device: a path needs \"dscp\" or \"rate\""},
        {HEAD "egress_devise = \"eth1\"\n", "classes.a.egress_devise: unknown key (did you mean \"egress_device\"?)"},
    };
    for (const auto& c : cases)
        EXPECT_NE(first_error(c.toml).find(c.message), std::string::npos) << c.toml << "\n" << first_error(c.toml);
}

TEST(ClassPathPlan, MarksAreLanesOwnAndStable) {
    const uint32_t m = path_mark("training");
    EXPECT_EQ(m & kPathMarkMask, kPathMarkBase);
    EXPECT_NE(m & 0xffff, 0u);
    EXPECT_TRUE(is_path_mark(m));
    EXPECT_EQ(m, path_mark("training"));
    EXPECT_NE(m, path_mark("inference"));
    EXPECT_FALSE(is_path_mark(0x4000));
    EXPECT_FALSE(is_path_mark(kPathMarkBase));
    EXPECT_EQ(path_mark_text(0x4c4e00ab), "0x4c4e00ab");
}

TEST(ClassPathPlan, RtTablesLookup) {
    const std::string text = "# comment\n255\tlocal\n254 main\n100 bulk # the bulk fabric\n0x65\tfast\n7 bulk\n";
    EXPECT_EQ(rt_tables_lookup(text, "bulk"), 7u);  // the last line naming it wins
    EXPECT_EQ(rt_tables_lookup(text, "fast"), 101u);
    EXPECT_EQ(rt_tables_lookup(text, "main"), 254u);
    EXPECT_FALSE(rt_tables_lookup(text, "bul"));
    EXPECT_FALSE(rt_tables_lookup(text, "comment"));
}

PathJob job(uint32_t id, uint32_t prio, const std::string& cls, bool owned) {
    PathJob j;
    j.job_id = id;
    j.priority = prio;
    j.path.class_name = cls;
    j.path.mark = path_mark(cls);
    j.path.owned_table = owned;
    j.path.table = owned ? j.path.mark : 100;
    if (owned) {
        j.path.device = "bulk0";
        j.path.ifindex = 7;
        j.path.src4 = "10.1.0.1";
        j.path.src6 = "fd01::1";
        j.path.destinations = path_destinations(
            {{AF_INET, "10.1.0.1", "10.1.0.0/24"}, {AF_INET6, "fd01::1", "fd01::/64"}}, {"10.20.0.0/16"});
    }
    return j;
}

TEST(ClassPathPlan, RecordRoundTrips) {
    const PathJob j = job(42, 0x1a4e0007, "training", true);
    auto back = decode_path_job(encode_path_job(j));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, j);
    EXPECT_FALSE(decode_path_job("job=1\npriority=2\nmark=5\ntable=100\n"));  // not Lanes' mark
    EXPECT_FALSE(decode_path_job("job=x\n"));
}

TEST(ClassPathPlan, RulesAreSharedByTheClassJobs) {
    const auto want = desired_path_objects({job(1, 0x1a4e0002, "training", true), job(2, 0x1a4e0003, "training", true),
                                            job(3, 0x1a4e0004, "batch", false)});
    EXPECT_EQ(want.rules.size(), 4u);   // two classes x IPv4, IPv6
    EXPECT_EQ(want.routes.size(), 3u);  // training's own table: 2 subnets, 1 prefix; batch's table is the admin's
    EXPECT_EQ(want.elements.size(), 3u);
    EXPECT_EQ(want.elements.at(0x1a4e0004), path_mark("batch"));
}

TEST(ClassPathPlan, RepairsAddWhatIsMissingAndDeleteWhatNoJobWants) {
    const auto want = desired_path_objects({job(1, 0x1a4e0002, "training", true)});
    EXPECT_TRUE(plan_path_repairs(want, want).empty());
    PathObjects seen = want;
    seen.rules.erase(seen.rules.begin());  // `ip rule del`
    seen.elements[0x1a4e0009] = path_mark("old");
    seen.rules.push_back(PathRule{AF_INET, path_mark("old"), 100});
    auto rep = plan_path_repairs(want, seen);
    ASSERT_EQ(rep.add_rules.size(), 1u);
    EXPECT_EQ(rep.add_rules[0], want.rules[0]);
    ASSERT_EQ(rep.delete_rules.size(), 1u);
    EXPECT_EQ(rep.delete_rules[0].mark, path_mark("old"));
    EXPECT_EQ(rep.delete_elements, std::vector<uint32_t>{0x1a4e0009});
    // The last job gone: everything goes.
    auto none = plan_path_repairs(desired_path_objects({}), want);
    EXPECT_EQ(none.delete_rules.size(), 2u);
    EXPECT_EQ(none.delete_routes.size(), 3u);
    EXPECT_EQ(none.delete_elements.size(), 1u);
}

TEST(ClassPathConfig, EgressPrefixesAreCanonicalCidrs) {
    auto c = parse_config(HEAD
                          "egress_device = \"bulk0\"\n"
                          "egress_prefixes = [\"10.20.0.0/16\", \"FD00:20:0::/48\", \"0.0.0.0/0\", \"10.20.0.0/16\"]\n"
                          "[classes.b]\nrate = \"1Gbit\"\negress_device = \"bulk0\"\n",
                          "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->classes.at("a").path->egress_prefixes,
              (std::vector<std::string>{"10.20.0.0/16", "fd00:20::/48", "0.0.0.0/0"}));
    EXPECT_TRUE(c->classes.at("b").path->egress_prefixes.empty());
    EXPECT_EQ(config_parse::canonical_cidr("::/0").value(), "::/0");
    EXPECT_EQ(config_parse::canonical_cidr("192.168.7.0/24").value(), "192.168.7.0/24");
    EXPECT_FALSE(config_parse::canonical_cidr("192.168.7.0"));
    EXPECT_FALSE(config_parse::canonical_cidr("192.168.7.0/33"));
    EXPECT_FALSE(config_parse::canonical_cidr("fd00::/129"));
    EXPECT_FALSE(config_parse::canonical_cidr("10.0.0.0/x"));
}

TEST(ClassPathConfig, EgressPrefixMistakesNameTheKey) {
    struct Case {
        std::string toml, message;
    };
    const Case cases[] = {
        {HEAD "egress_device = \"bulk0\"\negress_prefixes = [\"10.20.0.0/16\", \"10.20.0.0\"]\n",
         "lanes.toml:5:36: classes.a.egress_prefixes[1]: not a CIDR: no prefix length"},
        {HEAD "egress_device = \"bulk0\"\negress_prefixes = \"10.20.1.0/16\"\n",
         "lanes.toml:5:19: classes.a.egress_prefixes: not a CIDR: host bits set past /16 (did you mean "
         "\"10.20.0.0/16\"?)"},
        {HEAD "egress_device = \"bulk0\"\negress_prefixes = [\"bulk.example/8\"]\n",
         "classes.a.egress_prefixes[0]: not a CIDR: \"bulk.example\" is not an IPv4 or IPv6 address"},
        {HEAD "egress_device = \"bulk0\"\negress_prefixes = [\"fd00::/200\"]\n",
         "classes.a.egress_prefixes[0]: not a CIDR: prefix length 200 is longer than 128"},
        {HEAD "egress_device = \"bulk0\"\negress_prefixes = [10]\n", "classes.a.egress_prefixes[0]: expected a string"},
        {HEAD "route_table = 100\negress_prefixes = [\"10.20.0.0/16\"]\n",
         "lanes.toml:5:19: classes.a.egress_prefixes: needs \"egress_device\""},
        {HEAD "egress_prefixes = [\"10.20.0.0/16\"]\n", "classes.a.egress_prefixes: needs \"egress_device\""},
    };
    for (const auto& c : cases)
        EXPECT_NE(first_error(c.toml).find(c.message), std::string::npos) << c.toml << "\n" << first_error(c.toml);
}

TEST(ClassPathPlan, TheTableRoutesTheDeviceSubnetsAndTheEgressPrefixes) {
    EXPECT_EQ(subnet_of("10.1.2.3", 24), "10.1.2.0/24");
    EXPECT_EQ(subnet_of("10.1.2.3", 32), "10.1.2.3/32");
    EXPECT_EQ(subnet_of("fd01::7:1", 64), "fd01::/64");
    EXPECT_EQ(subnet_of("10.1.2.3", 33), "");
    EXPECT_EQ(subnet_of("bulk0", 8), "");
    const std::vector<DeviceAddress> addrs = {
        {AF_INET, "10.1.0.1", "10.1.0.0/24"},
        {AF_INET, "10.9.0.1", "10.9.0.0/16"},  // a second address: its subnet, itself as source
        {AF_INET6, "fd01::1", "fd01::/64"},
    };
    // No egress_prefixes: the subnets only (no default route: the rest goes by main).
    EXPECT_EQ(path_destinations(addrs, {}), (std::vector<PathDestination>{
                                                {AF_INET, "10.1.0.0/24", "10.1.0.1"},
                                                {AF_INET, "10.9.0.0/16", "10.9.0.1"},
                                                {AF_INET6, "fd01::/64", "fd01::1"},
                                            }));
    // Prefixes take the first address of their family; one already a subnet is not doubled.
    EXPECT_EQ(path_destinations(addrs, {"10.20.0.0/16", "10.9.0.0/16", "::/0", "0.0.0.0/0"}),
              (std::vector<PathDestination>{
                  {AF_INET, "0.0.0.0/0", "10.1.0.1"},
                  {AF_INET, "10.1.0.0/24", "10.1.0.1"},
                  {AF_INET, "10.20.0.0/16", "10.1.0.1"},
                  {AF_INET, "10.9.0.0/16", "10.9.0.1"},
                  {AF_INET6, "::/0", "fd01::1"},
                  {AF_INET6, "fd01::/64", "fd01::1"},
              }));
    // An IPv4-only device: an IPv6 prefix has no source there; IPv6 keeps the main table.
    EXPECT_EQ(path_destinations({addrs[0]}, {"fd00:20::/48"}),
              (std::vector<PathDestination>{{AF_INET, "10.1.0.0/24", "10.1.0.1"}}));

    const auto want = desired_path_objects({job(1, 0x1a4e0002, "training", true)});
    const uint32_t t = path_mark("training");
    EXPECT_EQ(want.routes, (std::vector<PathRoute>{
                               {AF_INET, t, "10.1.0.0/24", 7, "10.1.0.1"},
                               {AF_INET, t, "10.20.0.0/16", 7, "10.1.0.1"},
                               {AF_INET6, t, "fd01::/64", 7, "fd01::1"},
                           }));
    // Drift: a prefix route deleted comes back; a default route someone added
    // to Lanes' table goes (it would take the job's controller traffic).
    PathObjects seen = want;
    seen.routes.erase(seen.routes.begin() + 1);
    seen.routes.push_back(PathRoute{AF_INET, t, "0.0.0.0/0", 7, "10.1.0.1"});
    auto rep = plan_path_repairs(want, seen);
    EXPECT_EQ(rep.add_routes, (std::vector<PathRoute>{{AF_INET, t, "10.20.0.0/16", 7, "10.1.0.1"}}));
    EXPECT_EQ(rep.delete_routes, (std::vector<PathRoute>{{AF_INET, t, "0.0.0.0/0", 7, "10.1.0.1"}}));
}

TEST(ClassPathPlan, RecordsKeepTheirRoutesAndOldOnesMeanDefaultRoutes) {
    const PathJob j = job(42, 0x1a4e0007, "training", true);
    const std::string text = encode_path_job(j);
    EXPECT_NE(text.find("routes=3\nroute=10.1.0.0/24 10.1.0.1\nroute=10.20.0.0/16 10.1.0.1\nroute=fd01::/64 fd01::1\n"),
              std::string::npos)
        << text;
    // A record written before egress_prefixes: its table held a default route
    // per family via the device, and reconcile keeps that until the job ends.
    const std::string old_record =
        "job=42\npriority=441319431\nclass=training\nmark=" + std::to_string(path_mark("training")) +
        "\ntable=" + std::to_string(path_mark("training")) +
        "\nowned_table=1\ndevice=bulk0\nifindex=7\nsrc4=10.1.0.1\nsrc6=fd01::1\n";
    auto old = decode_path_job(old_record);
    ASSERT_TRUE(old) << old.error().message;
    EXPECT_EQ(old->path.destinations,
              (std::vector<PathDestination>{{AF_INET, "0.0.0.0/0", "10.1.0.1"}, {AF_INET6, "::/0", "fd01::1"}}));
    EXPECT_EQ(desired_path_objects({*old}).routes.size(), 2u);
    // A new record with no route of a family routes none of it (no default added).
    auto none = decode_path_job(old_record + "routes=1\nroute=10.1.0.0/24 10.1.0.1\n");
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_EQ(none->path.destinations, (std::vector<PathDestination>{{AF_INET, "10.1.0.0/24", "10.1.0.1"}}));
    // Truncated or garbled: refused (the record is logged and ignored, not half-read).
    EXPECT_FALSE(decode_path_job(old_record + "routes=2\nroute=10.1.0.0/24 10.1.0.1\n"));
    EXPECT_FALSE(decode_path_job(old_record + "routes=1\nroute=10.1.0.1/24 10.1.0.1\n"));
    EXPECT_FALSE(decode_path_job(old_record + "routes=1\nroute=10.1.0.0/24\n"));
    // A route_table path's record has no routes of its own, old or new.
    auto admin = decode_path_job(encode_path_job(job(3, 0x1a4e0004, "batch", false)));
    ASSERT_TRUE(admin);
    EXPECT_TRUE(admin->path.destinations.empty());
}

TEST(ClassPathPlan, TwoClassesWithOneMarkAreRefused) {
    Config c;
    ClassConfig a;
    a.name = "a";
    a.path = ClassPath{};
    a.path->table = 100;
    c.classes["a"] = a;
    auto ok = path_marks(c);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->at("a"), path_mark("a"));
    // Two names with one mark (16 bits: a few hundred names find a pair).
    std::map<uint32_t, std::string> seen;
    std::string x, y;
    for (int i = 0; i < 100000 && x.empty(); ++i) {
        std::string n = "c" + std::to_string(i);
        auto [it, fresh] = seen.emplace(path_mark(n), n);
        if (!fresh) x = it->second, y = n;
    }
    ASSERT_FALSE(x.empty());
    ClassConfig b = a;
    b.name = x;
    c.classes[x] = b;
    b.name = y;
    c.classes[y] = b;
    auto clash = path_marks(c);
    ASSERT_FALSE(clash);
    EXPECT_NE(clash.error().message.find("get the same path mark"), std::string::npos);
}

TEST(ClassPathPlan, NftScriptMapsPriorityToMark) {
    const std::string s = path_nft_base_script();
    EXPECT_NE(s.find("add map inet lanes_paths marks { type classid : mark; }"), std::string::npos);
    EXPECT_NE(s.find("type route hook output priority mangle + 1"), std::string::npos);
    EXPECT_NE(s.find("out meta mark != 0x4c4e0000 meta mark set meta priority map @marks"), std::string::npos);
    EXPECT_NE(s.find("meta mark and 0xffff0000 == 0x4c4e0000 meta mark != 0x4c4e0000 oifname != \"lo\" masquerade"),
              std::string::npos);
    EXPECT_NE(s.find("done meta mark and 0xffff0000 == 0x4c4e0000 meta mark set 0x4c4e0000"), std::string::npos);
}

TEST(ClassPathStatus, StatusShowsTheJobsPath) {
    ctl::StatusReport report;
    report.node = "gpu1";
    report.leaf_qdisc = "fq_codel";
    ctl::JobStatus on_path, plain;
    on_path.state.job_id = 11;
    on_path.state.class_name = "training";
    on_path.path = job(11, 0x1a4e0002, "training", true);
    plain.state.job_id = 12;
    plain.state.class_name = "inference";
    report.jobs = {on_path, plain};
    const std::string text = ctl::format_status_human(report);
    EXPECT_NE(text.find("path: JobId=11 training: bulk0 (table " + path_mark_text(path_mark("training")) +
                        "), fwmark " + path_mark_text(path_mark("training"))),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("JobId=12"), std::string::npos);
    const std::string json = json::write(ctl::status_json(report));
    EXPECT_NE(json.find("\"path\":{\"device\":\"bulk0\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"src4\":\"10.1.0.1\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"routes\":[{\"dst\":\"10.1.0.0/24\",\"src\":\"10.1.0.1\"},"
                        "{\"dst\":\"10.20.0.0/16\",\"src\":\"10.1.0.1\"}"),
              std::string::npos)
        << json;
}

TEST(ClassPathPlan, NodesNicSaysWhereTheDeviceIs) {
    NodeConfig node;
    NicSelector fabric, bulk;
    fabric.nodes = "*";
    fabric.device = "eth0";
    bulk.nodes = "train[1-4]";
    bulk.device = "ens2f*";
    node.nics = {fabric, bulk};
    ClassPath on_bulk;
    on_bulk.device = "ens2f1";
    on_bulk.vlan = 200;  // the VLAN's NIC is what [[nodes.nic]] names
    EXPECT_EQ(path_declared_on(node, on_bulk, "train3"), true);
    EXPECT_EQ(path_declared_on(node, on_bulk, "infer1"), false);  // default path there
    ClassPath elsewhere;
    elsewhere.device = "ib1";  // no [[nodes.nic]] names it: every node (checked at launch)
    EXPECT_EQ(path_declared_on(node, elsewhere, "infer1"), true);
    ClassPath table;
    table.table = 100;
    EXPECT_EQ(path_declared_on(node, table, "infer1"), true);
    node.nics[1].nodes = "train[1-";
    EXPECT_FALSE(path_declared_on(node, on_bulk, "train3"));
}

}  // namespace

namespace {
// `nft list table inet lanes_paths` as nft 1.0.6 prints the base script with
// one element.
const char* kIntactListing = R"(table inet lanes_paths {
	map marks {
		type classid : mark
		elements = { 1a4e:10 : 0x4c4e12ab,
			     1a4e:1f : 0x4c4e0001 }
	}

	chain out {
		type route hook output priority mangle + 1; policy accept;
		meta mark != 0x4c4e0000 meta mark set meta priority map @marks
	}

	chain post {
		type nat hook postrouting priority srcnat; policy accept;
		meta mark 0x4c4e0000/16 meta mark != 0x4c4e0000 oifname != "lo" masquerade
	}

	chain done {
		type filter hook postrouting priority srcnat + 1; policy accept;
		meta mark 0x4c4e0000/16 meta mark set 0x4c4e0000
	}
}
)";
std::string without(std::string text, const std::string& what) {
    auto at = text.find(what);
    if (at != std::string::npos) text.erase(at, what.size());
    return text;
}
}  // namespace

TEST(ClassPathNftListing, IntactTableHasNoDamageAndItsElements) {
    const PathNftListing l = parse_path_nft_listing(kIntactListing);
    EXPECT_EQ(l.damage, "");
    EXPECT_EQ(l.elements, (std::map<uint32_t, uint32_t>{{0x1a4e0010, 0x4c4e12ab}, {0x1a4e001f, 0x4c4e0001}}));
}

TEST(ClassPathNftListing, DeletedChainIsDamage) {
    const std::string gone = without(kIntactListing,
                                     "\tchain post {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n"
                                     "\t\tmeta mark 0x4c4e0000/16 meta mark != 0x4c4e0000 oifname != \"lo\" "
                                     "masquerade\n\t}\n");
    const PathNftListing l = parse_path_nft_listing(gone);
    EXPECT_EQ(l.damage, "chain post missing");
    EXPECT_EQ(l.elements.size(), 2u);
}

TEST(ClassPathNftListing, FlushedOrAddedRulesAreDamage) {
    const std::string flushed =
        without(kIntactListing, "\t\tmeta mark != 0x4c4e0000 meta mark set meta priority map @marks\n");
    EXPECT_EQ(parse_path_nft_listing(flushed).damage, "chain out has 0 rules instead of Lanes' one");
    std::string added = kIntactListing;
    added.insert(added.find("\t}\n\n\tchain done"), "\t\tip daddr 10.0.0.1 accept\n");
    EXPECT_EQ(parse_path_nft_listing(added).damage, "chain post has 2 rules instead of Lanes' one");
    std::string replaced = kIntactListing;
    replaced.replace(replaced.find("meta mark set 0x4c4e0000\n"), 25, "counter");
    EXPECT_EQ(parse_path_nft_listing(replaced).damage, "chain done has 1 rule (not Lanes') instead of Lanes' one");
}

TEST(ClassPathNftListing, MissingMapAndForeignChainAreDamage) {
    std::string text = kIntactListing;
    const auto map_at = text.find("\tmap marks {");
    text.erase(map_at, text.find("\tchain out") - map_at);
    text.insert(text.rfind("}"), "\tchain mine {\n\t\ttype filter hook input priority 0; policy accept;\n\t}\n");
    const PathNftListing l = parse_path_nft_listing(text);
    EXPECT_EQ(l.damage, "map marks missing, chain mine is not Lanes'");
    EXPECT_TRUE(l.elements.empty());
}

namespace {

TEST(ClassPathCheck, CheckSaysWhatTakesEachPath) {
    auto c = lanes::parse_config(HEAD
                                 "egress_device = \"bulk0\"\n"
                                 "egress_prefixes = [\"10.20.0.0/16\", \"fd00:20::/48\"]\n"
                                 "[classes.b]\nrate = \"1Gbit\"\negress_device = \"eth1\"\nvlan = 200\n"
                                 "[classes.c]\nrate = \"1Gbit\"\nroute_table = 100\n"
                                 "[classes.d]\nrate = \"1Gbit\"\negress_device = \"eth2\"\n"
                                 "egress_prefixes = [\"0.0.0.0/0\", \"::/0\"]\n",
                                 "lanes.toml");
    ASSERT_TRUE(c) << c.error().message;
    lanes::ctl::CheckReport report;
    report.ok = true;
    report.config_path = "lanes.toml";
    lanes::ctl::summarize(*c, report);
    const std::string text = lanes::ctl::format_check_human(report);
    EXPECT_NE(text.find("path: class a: egress_device bulk0: its subnets and egress_prefixes 10.20.0.0/16, "
                        "fd00:20::/48; other destinations by the main table\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("path: class b: vlan eth1.200: its subnets; other destinations by the main table\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("path: class c: route_table 100\n"), std::string::npos) << text;
    EXPECT_NE(text.find("path: class d: egress_device eth2: its subnets and egress_prefixes 0.0.0.0/0, ::/0; every "
                        "destination (slurmctld included) takes the path\n"),
              std::string::npos)
        << text;
    EXPECT_NE(lanes::json::write(lanes::ctl::check_json(report)).find("\"paths\":[\"class a: egress_device bulk0"),
              std::string::npos);
}

}  // namespace
