// SPDX-License-Identifier: GPL-2.0-or-later
// NodeShaper over recording fakes of the kernel interfaces; cgroup path logic;
// the job state file format.
#include "node/node_shaper.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "node/cgroup_tree.hpp"
#include "node/job_state_store.hpp"
#include "node/packet_marker.hpp"
#include "node/traffic_control.hpp"
#include "tests/unit/test_util.hpp"

namespace lanes {
namespace {

using lanes::test::kGbit;

// The kernel as the fakes see it; shared so a test can inspect and break it.
struct FakeKernel {
    std::map<std::string, int> ifindex{{"lo", 1}, {"eth0", 2}, {"eth1", 3}, {"ib0", 4}};
    std::map<int, RootQdisc> roots;                         // ifindex -> root
    std::map<int, std::map<uint32_t, HtbParams>> classes;   // ifindex -> classid -> params
    std::map<int, std::map<uint32_t, std::string>> leaves;  // ifindex -> parent class -> kind
    std::map<uint32_t, NftEnsureJob> nft_jobs;
    std::set<int> nft_levels;
    bool nft_table = false;
    std::map<int, GsoSize> gso;
    std::optional<uint8_t> unclassified;
    std::set<std::string> dirs;
    std::vector<std::string> scopes;  // Slurm stepd scopes
    std::map<std::string, std::vector<pid_t>> procs;
    std::vector<std::string> log;  // every call, in order
    bool fail_nft_add = false;
    bool has_fq_codel = false;
    std::string route_dev = "ib0";
    std::set<std::string> down;  // links that are down
    // Runs at the start of every add_class: the kernel changing under a setup.
    std::function<void()> before_add_class;
};

class FakeTc final : public TrafficControl {
public:
    explicit FakeTc(FakeKernel& k) : k_(k) {}
    Result<std::vector<std::string>> devices() override {
        std::vector<std::string> out;
        for (const auto& [name, idx] : k_.ifindex) out.push_back(name);
        return out;
    }
    Result<int> ifindex(const std::string& d) override {
        auto it = k_.ifindex.find(d);
        if (it == k_.ifindex.end()) return fail("no device " + d);
        return it->second;
    }
    Result<std::string> route_device(const std::string& prefix) override {
        k_.log.push_back("route " + prefix);
        return k_.route_dev;
    }
    std::optional<uint64_t> link_speed_bits(const std::string& d) override {
        if (d.starts_with("eth")) return 25 * kGbit;
        return std::nullopt;
    }
    Result<RootQdisc> root_qdisc(int i) override { return k_.roots.count(i) ? k_.roots[i] : RootQdisc{}; }
    bool qdisc_kind_available(const std::string& kind) override { return kind == "fq_codel" && k_.has_fq_codel; }
    Result<void> ensure_root(const EnsureRoot& o) override {
        k_.log.push_back(describe(Operation{o}));
        auto& root = k_.roots[o.ifindex];
        if (!o.root_exists) {
            if (root.handle != 0 && !o.replace_foreign) return fail("EEXIST");
            root = RootQdisc{"htb", tc_handle(o.major, 0)};
            k_.classes[o.ifindex].clear();
            k_.leaves[o.ifindex].clear();
        }
        k_.classes[o.ifindex][tc_handle(o.major, kParentMinor)] = o.parent;
        k_.classes[o.ifindex][tc_handle(o.major, kDefaultMinor)] = o.fallback;
        return {};
    }
    Result<void> add_class(const AddClass& o) override {
        if (k_.before_add_class) k_.before_add_class();
        k_.log.push_back(describe(Operation{o}));
        if (!k_.classes[o.ifindex].count(o.parent)) return fail("no parent class");
        k_.classes[o.ifindex][o.classid] = o.htb;
        return {};
    }
    Result<void> add_leaf_qdisc(const AddLeafQdisc& o) override {
        k_.log.push_back(describe(Operation{o}));
        if (!k_.classes[o.ifindex].count(o.parent)) return fail("no class");
        k_.leaves[o.ifindex][o.parent] = o.kind;
        return {};
    }
    Result<void> delete_leaf_qdisc(const DeleteLeafQdisc& o) override {
        k_.log.push_back(describe(Operation{o}));
        int idx = o.ifindex ? o.ifindex : k_.ifindex[o.device];
        k_.leaves[idx].erase(o.parent);
        return {};
    }
    Result<void> delete_class(const DeleteClass& o) override {
        k_.log.push_back(describe(Operation{o}));
        int idx = o.ifindex ? o.ifindex : k_.ifindex[o.device];
        k_.classes[idx].erase(o.classid);
        k_.leaves[idx].erase(o.classid);
        return {};
    }
    Result<void> delete_root(const DeleteRoot& o) override {
        k_.log.push_back(describe(Operation{o}));
        int idx = o.ifindex ? o.ifindex : k_.ifindex[o.device];
        if (k_.roots[idx].handle == tc_handle(o.major, 0)) {
            k_.roots.erase(idx);
            k_.classes.erase(idx);
            k_.leaves.erase(idx);
        }
        return {};
    }
    Result<ClassCounters> class_counters(int i, uint32_t c) override {
        if (!k_.classes[i].count(c)) return fail("no class");
        return ClassCounters{1000u * (c & 0xffff), 10, 1, 2, 0};
    }
    Result<std::vector<uint32_t>> classes(int i, uint16_t major) override {
        std::vector<uint32_t> out;
        for (const auto& [id, p] : k_.classes[i])
            if ((id >> 16) == major) out.push_back(id);
        return out;
    }
    Result<GsoSize> gso_size(int i) override { return k_.gso.count(i) ? k_.gso[i] : GsoSize{65536, 65536}; }
    Result<void> set_gso_size(int i, const GsoSize& g) override {
        k_.log.push_back("gso " + std::to_string(i) + " " + std::to_string(g.max) + " " + std::to_string(g.ipv4_max));
        k_.gso[i] = g;
        return {};
    }
    std::optional<bool> link_down(const std::string& d) override { return k_.down.count(d) > 0; }
    Result<TcSnapshot> snapshot(int i) override {
        TcSnapshot snap;
        snap.root = k_.roots.count(i) ? k_.roots[i] : RootQdisc{};
        for (const auto& [id, p] : k_.classes[i])
            snap.classes.push_back(ObservedClass{id, 0, "htb", p.rate_bits, p.ceil_bits, p.prio, p.quantum});
        for (const auto& [parent, kind] : k_.leaves[i])
            snap.qdiscs.push_back(ObservedQdisc{tc_handle(parent & 0xffff, 0), parent, kind});
        return snap;
    }

private:
    FakeKernel& k_;
};

class FakeMarker final : public PacketMarker {
public:
    explicit FakeMarker(FakeKernel& k) : k_(k) {}
    void set_base(const MarkerBase& wanted) override { wanted_ = wanted; }
    Result<MarkedCgroup> resolve(const std::string& cgroup) override {
        return MarkedCgroup{std::hash<std::string>{}(cgroup) | 1, 2};
    }
    Result<MarkedCgroup> add_job(const NftEnsureJob& o, bool* rebuilt) override {
        k_.log.push_back(describe(Operation{o}));
        if (o.cgroup_id == 0) return fail("nft: no cgroup id to key the map element");
        if (k_.fail_nft_add) return fail("nft: job " + std::to_string(o.job_id) + ": injected failure");
        *rebuilt = !k_.nft_table;
        if (!k_.nft_table) {
            k_.log.push_back("nft base");
            k_.nft_table = true;
        }
        for (int l : wanted_.levels) k_.nft_levels.insert(l);
        k_.nft_levels.insert(o.level ? o.level : 2);
        k_.unclassified = wanted_.unclassified;
        NftEnsureJob stored = o;
        if (!stored.level) stored.level = 2;
        k_.nft_jobs[o.job_id] = stored;
        return MarkedCgroup{o.cgroup_id, o.level ? o.level : 2};
    }
    Result<void> remove_job(const NftRemoveJob& o) override {
        k_.log.push_back(describe(Operation{o}));
        for (auto it = k_.nft_jobs.begin(); it != k_.nft_jobs.end();)
            it = it->second.cgroup_id == o.cgroup_id ? k_.nft_jobs.erase(it) : std::next(it);
        return {};
    }
    Result<MarkerCheck> check(const std::vector<NftEnsureJob>& jobs) override {
        MarkerCheck c;
        c.base_ok = k_.nft_table;
        for (const auto& j : jobs)
            if (!k_.nft_jobs.count(j.job_id) || !(k_.nft_jobs[j.job_id] == j)) c.jobs_missing.push_back(j.job_id);
        return c;
    }
    Result<void> rebuild(const std::vector<NftEnsureJob>& jobs) override {
        k_.log.push_back("nft rebuild " + std::to_string(jobs.size()));
        k_.nft_table = true;
        k_.nft_jobs.clear();
        for (const auto& j : jobs) k_.nft_jobs[j.job_id] = j;
        return {};
    }
    Result<void> remove_all() override {
        k_.log.push_back("nft delete table");
        k_.nft_jobs.clear();
        k_.nft_levels.clear();
        k_.nft_table = false;
        return {};
    }

private:
    FakeKernel& k_;
    MarkerBase wanted_;
};

class FakeCgroups final : public CgroupTree {
public:
    FakeCgroups(FakeKernel& k, Cgroup2Mount m) : k_(k), m_(std::move(m)) {}
    Result<Cgroup2Mount> mount() override { return m_; }
    bool exists(const std::string& d) override { return k_.dirs.count(d) > 0; }
    Result<uint64_t> ensure_dir(const std::string& d) override {
        k_.log.push_back("mkdir " + d);
        k_.dirs.insert(d);
        return 1000 + k_.dirs.size();
    }
    Result<uint64_t> dir_id(const std::string& d) override {
        if (!k_.dirs.count(d)) return fail("no dir");
        return 77;
    }
    Result<void> attach(const std::string& d, pid_t p) override {
        if (!k_.dirs.count(d)) return fail("no dir " + d);
        k_.procs[d].push_back(p);
        return {};
    }
    Result<void> remove_dir(const std::string& d, const std::string& parent) override {
        k_.log.push_back("rmdir " + d);
        for (pid_t p : k_.procs[d]) k_.procs[parent].push_back(p);
        k_.procs.erase(d);
        k_.dirs.erase(d);
        return {};
    }
    Result<std::vector<pid_t>> pids(const std::string& d) override { return k_.procs[d]; }
    std::vector<std::string> slurm_stepd_scopes() override { return k_.scopes; }

private:
    FakeKernel& k_;
    Cgroup2Mount m_;
};

const Cgroup2Mount kHybrid{"/sys/fs/cgroup/unified", "/"};
const Cgroup2Mount kUnified{"/sys/fs/cgroup", "/"};

class NodeShaperTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/lanes-unit-state.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        state_dir_ = tmpl;
        config_.state_dir = state_dir_ + "/run/lanes";
        NicSelector sel;
        sel.nodes = "gpu[1-4]";
        sel.device = "eth*";
        sel.line = 12;
        config_.nics.push_back(sel);
    }
    void TearDown() override { std::filesystem::remove_all(state_dir_); }

    std::unique_ptr<NodeShaper> open(const std::string& host = "gpu2", Cgroup2Mount mount = kHybrid) {
        auto s = NodeShaper::open_with(config_, host, std::make_unique<FakeTc>(k_), std::make_unique<FakeMarker>(k_),
                                       std::make_unique<FakeCgroups>(k_, mount),
                                       [this](LogLevel, const std::string& line) { logs_.push_back(line); });
        EXPECT_TRUE(s) << (s ? "" : s.error().message);
        return s ? std::move(*s) : nullptr;
    }
    static JobNetRequest req(uint32_t job, uint64_t rate, uint8_t dscp = 8) {
        JobNetRequest r{job, "training", {}};
        r.net.rate = Rate{rate, 0};
        r.net.dscp = dscp;
        r.net.rank = 1;
        return r;
    }
    int job_files() const {
        int n = 0;
        for (const auto& e : std::filesystem::directory_iterator(config_.state_dir)) {
            std::string name = e.path().filename();
            if (name.starts_with("job_") || name.starts_with("minor_")) ++n;
        }
        return n;
    }

    FakeKernel k_;
    NodeConfig config_;
    std::string state_dir_;
    std::vector<std::string> logs_;
};

TEST_F(NodeShaperTest, SelectsNicsByHostlistAndGlob) {
    auto s = open();
    ASSERT_TRUE(s);
    ASSERT_EQ(s->nics().size(), 2u);
    EXPECT_EQ(s->nics()[0].device, "eth0");
    EXPECT_EQ(s->nics()[1].device, "eth1");
    EXPECT_EQ(s->nics()[0].link_speed_bits, 25 * kGbit);  // sysfs
    EXPECT_EQ(s->leaf_qdisc_kind(), "pfifo");
    bool said = false;
    for (const auto& l : logs_) said |= l.find("no fq_codel") != std::string::npos;
    EXPECT_TRUE(said);
    struct stat st {};
    ASSERT_EQ(::stat(config_.state_dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(NodeShaperTest, RouteToSelectorAndSpeedOverride) {
    config_.nics.clear();
    NicSelector sel;
    sel.route_to = "10.10.0.0/16";
    sel.link_speed_bits = 200 * kGbit;
    config_.nics.push_back(sel);
    k_.has_fq_codel = true;
    auto s = open("anyhost");
    ASSERT_TRUE(s);
    ASSERT_EQ(s->nics().size(), 1u);
    EXPECT_EQ(s->nics()[0].device, "ib0");
    EXPECT_EQ(s->nics()[0].link_speed_bits, 200 * kGbit);
    EXPECT_EQ(s->leaf_qdisc_kind(), "fq_codel");
}

TEST_F(NodeShaperTest, NoNicForThisNodeIsAPreciseError) {
    auto s = NodeShaper::open_with(config_, "cpu7", std::make_unique<FakeTc>(k_), std::make_unique<FakeMarker>(k_),
                                   std::make_unique<FakeCgroups>(k_, kHybrid));
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("cpu7"), std::string::npos) << s.error().message;
    config_.nics[0].device = "nope*";
    s = NodeShaper::open_with(config_, "gpu1", std::make_unique<FakeTc>(k_), std::make_unique<FakeMarker>(k_),
                              std::make_unique<FakeCgroups>(k_, kHybrid));
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("line 12"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("nope*"), std::string::npos) << s.error().message;
}

TEST_F(NodeShaperTest, ShapesWhatMatchesAndNamesWhatDoesNot) {
    // A selector matching no interface next to one that matches: the match is
    // shaped, the other reported (it used to leave every NIC unshaped).
    NicSelector none;
    none.nodes = "gpu[1-4]";
    none.device = "ens9*";
    none.line = 20;
    config_.nics.insert(config_.nics.begin(), none);
    NicSelector ib;  // no link speed known for ib0
    ib.nodes = "gpu[1-4]";
    ib.route_to = "10.10.0.0/16";
    ib.line = 30;
    config_.nics.push_back(ib);
    auto s = open();
    ASSERT_TRUE(s);
    ASSERT_EQ(s->nics().size(), 2u);
    ASSERT_EQ(s->problems().size(), 2u);
    EXPECT_NE(s->problems()[0].find("line 20"), std::string::npos) << s->problems()[0];
    EXPECT_NE(s->problems()[0].find("ens9*"), std::string::npos) << s->problems()[0];
    EXPECT_NE(s->problems()[1].find("ib0: link speed unknown"), std::string::npos) << s->problems()[1];
    EXPECT_NE(s->problems()[1].find("nodes.default_link_speed"), std::string::npos) << s->problems()[1];
    EXPECT_TRUE(s->apply(req(7, kGbit)));
    EXPECT_TRUE(NodeShaper::selects_nics(config_, "gpu2"));
    EXPECT_FALSE(NodeShaper::selects_nics(config_, "cpu7"));  // nothing configured: not an error
}

TEST_F(NodeShaperTest, OnlyUnusableNicsIsAnErrorNamingEach) {
    config_.nics[0].device = "ib*";  // ib0: no link speed
    auto s = NodeShaper::open_with(config_, "gpu1", std::make_unique<FakeTc>(k_), std::make_unique<FakeMarker>(k_),
                                   std::make_unique<FakeCgroups>(k_, kHybrid));
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("no NIC of node gpu1 can be shaped"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("ib0: link speed unknown"), std::string::npos) << s.error().message;
}

TEST_F(NodeShaperTest, SlurmJobDirNotYetMadeIsKeyedLater) {
    // PrologFlags=Contain: the prolog runs before Slurm makes job_<id>.
    k_.scopes = {"/sys/fs/cgroup/system.slice/other_slurmstepd.scope",
                 "/sys/fs/cgroup/system.slice/gpu2_slurmstepd.scope"};
    const std::string dir = "/sys/fs/cgroup/system.slice/gpu2_slurmstepd.scope/job_7";
    auto s = open("gpu2", kUnified);
    auto st = s->apply(req(7, kGbit, 34));
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_TRUE(st->cgroup_slurm);
    EXPECT_FALSE(st->cgroup_owned);
    EXPECT_EQ(st->cgroup, dir);  // this node's scope
    EXPECT_EQ(st->cgroup_id, 0u);
    EXPECT_FALSE(k_.nft_jobs.count(7));  // no element until a step keys it
    EXPECT_EQ(k_.roots.size(), 2u);      // the HTB class is made by the prolog
    for (const auto& line : k_.log) EXPECT_EQ(line.find("mkdir"), std::string::npos) << line;  // never our own dir

    int markers = 0;
    auto step = [&](uint32_t job) {
        return NodeShaper::classify_step_with(config_, "gpu2", job, std::make_unique<FakeCgroups>(k_, kUnified),
                                              [&](const Cgroup2Mount&) -> Result<std::unique_ptr<PacketMarker>> {
                                                  ++markers;
                                                  return std::make_unique<FakeMarker>(k_);
                                              });
    };
    // A step before slurmstepd made the dir cannot key it: an error naming the job.
    auto early = step(7);
    ASSERT_FALSE(early);
    EXPECT_NE(early.error().message.find("JobId=7"), std::string::npos) << early.error().message;
    EXPECT_NE(early.error().message.find(dir), std::string::npos) << early.error().message;

    k_.dirs.insert(dir);  // the extern step: slurmstepd made job_7
    auto keyed = step(7);
    ASSERT_TRUE(keyed) << keyed.error().message;
    EXPECT_EQ(keyed->cgroup_id, 77u);
    EXPECT_EQ(keyed->cgroup_level, 3);
    ASSERT_TRUE(k_.nft_jobs.count(7));
    EXPECT_EQ(k_.nft_jobs[7].cgroup_id, 77u);
    EXPECT_EQ(k_.nft_jobs[7].level, 3);  // a rule for the dir's level
    EXPECT_EQ(k_.nft_jobs[7].dscp, std::optional<uint8_t>(34));
    EXPECT_EQ(k_.nft_jobs[7].priority, tc_handle(config_.root_handle_major, st->minor));
    EXPECT_TRUE(k_.nft_levels.count(3));
    EXPECT_EQ(k_.unclassified, config_.unclassified_dscp);                   // the base keeps the unclassified rewrite
    EXPECT_EQ((*JobStateStore(config_.state_dir).load(7))->cgroup_id, 77u);  // kept for the epilog
    EXPECT_EQ(markers, 1);

    // Every later step (batch, srun, the next extern): nothing to do, no nft.
    ASSERT_TRUE(step(7));
    ASSERT_TRUE(step(7));
    EXPECT_EQ(markers, 1);
    // The element already there is not an error either (a state file rewritten).
    auto again = *JobStateStore(config_.state_dir).load(7);
    again->cgroup_id = 0;
    ASSERT_TRUE(JobStateStore(config_.state_dir).save(*again));
    ASSERT_TRUE(step(7));
    EXPECT_EQ(markers, 2);

    // No record: the step fails, naming the job.
    auto none = step(8);
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("JobId=8: no Lanes record"), std::string::npos) << none.error().message;

    // The epilog removes the element by the id kept in the state file.
    ASSERT_TRUE(s->remove(7));
    EXPECT_TRUE(k_.nft_jobs.empty());
    EXPECT_EQ(job_files(), 0);
    EXPECT_TRUE(k_.dirs.count(dir));  // Slurm's, never removed by Lanes
}

TEST_F(NodeShaperTest, UnshapedRecordIsKeptAndForgotten) {
    ASSERT_TRUE(NodeShaper::record_unshaped(config_, 9, "batch", "class batch has\nno network settings"));
    JobStateStore store(config_.state_dir);
    auto st = store.load(9);
    ASSERT_TRUE(st && *st);
    EXPECT_EQ((*st)->unshaped, "class batch has no network settings");
    auto s = open();
    ASSERT_TRUE(s->apply(req(10, kGbit)));
    ASSERT_TRUE(NodeShaper::record_unshaped(config_, 10, "training", "x"));  // shaped: left alone
    EXPECT_TRUE((*store.load(10))->unshaped.empty());
    ASSERT_TRUE(NodeShaper::forget_unshaped(config_, 9));
    ASSERT_TRUE(NodeShaper::forget_unshaped(config_, 10));  // not an unshaped record: kept
    EXPECT_FALSE(*store.load(9));
    EXPECT_TRUE(*store.load(10));
}

TEST_F(NodeShaperTest, TwoJobsGetTheirOwnClassesChainsAndDirs) {
    auto s = open();
    auto a = s->apply(req(7, kGbit));
    auto b = s->apply(req(8, 2 * kGbit, 34));
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_NE(a->minor, b->minor);
    EXPECT_EQ(a->cgroup, "/sys/fs/cgroup/unified/lanes/job_7");
    EXPECT_EQ(a->cgroup_key, "lanes/job_7");
    EXPECT_TRUE(a->cgroup_owned);
    EXPECT_NE(a->cgroup_id, 0u);
    for (int idx : {2, 3}) {
        EXPECT_EQ(k_.roots[idx].handle, tc_handle(0x1a4e, 0));
        EXPECT_EQ(k_.classes[idx].size(), 4u);  // :1, :fffe, two jobs
        EXPECT_EQ(k_.classes[idx][tc_handle(0x1a4e, b->minor)].rate_bits, 2 * kGbit);
        EXPECT_EQ(k_.leaves[idx].size(), 2u);
    }
    ASSERT_EQ(k_.nft_jobs.size(), 2u);
    EXPECT_EQ(k_.nft_jobs[8].dscp, 34);
    EXPECT_EQ(k_.nft_levels, std::set<int>{2});
    EXPECT_EQ(s->list().size(), 2u);
    auto c = s->counters(8);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->size(), 2u);
    EXPECT_EQ(c->at("eth1").bytes, 1000u * b->minor);
    EXPECT_FALSE(s->counters(99));
}

TEST_F(NodeShaperTest, ApplyIsIdempotent) {
    auto s = open();
    auto first = s->apply(req(7, kGbit));
    ASSERT_TRUE(first);
    auto classes = k_.classes;
    auto leaves = k_.leaves;
    auto again = s->apply(req(7, kGbit));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *first);
    EXPECT_EQ(k_.classes, classes);
    EXPECT_EQ(k_.leaves, leaves);
    EXPECT_EQ(k_.nft_jobs.size(), 1u);
    EXPECT_EQ(s->list().size(), 1u);
    EXPECT_EQ(job_files(), 2);  // job_7 + minor claim
    // The root was created once; the second apply only re-set the two classes.
    int root_adds = 0;
    for (const auto& l : k_.log) root_adds += l.find("add root htb") != std::string::npos;
    EXPECT_EQ(root_adds, 2);  // one per NIC
    // A changed request keeps the minor and updates the class in place.
    auto changed = s->apply(req(7, 3 * kGbit));
    ASSERT_TRUE(changed);
    EXPECT_EQ(changed->minor, first->minor);
    EXPECT_EQ(k_.classes[2][tc_handle(0x1a4e, first->minor)].rate_bits, 3 * kGbit);
}

TEST_F(NodeShaperTest, RemoveCleansEverythingAndAbsentIsFine) {
    auto s = open();
    ASSERT_TRUE(s->apply(req(7, kGbit)));
    ASSERT_TRUE(s->attach(7, 4242));
    EXPECT_EQ(k_.procs["/sys/fs/cgroup/unified/lanes/job_7"], std::vector<pid_t>{4242});
    ASSERT_TRUE(s->remove(7));
    EXPECT_EQ(k_.classes[2].size(), 2u);  // root and default class stay
    EXPECT_TRUE(k_.leaves[2].empty());
    EXPECT_TRUE(k_.nft_jobs.empty());
    EXPECT_FALSE(k_.dirs.count("/sys/fs/cgroup/unified/lanes/job_7"));
    EXPECT_EQ(k_.procs["/sys/fs/cgroup/unified/lanes"], std::vector<pid_t>{4242});  // leftovers to the parent
    EXPECT_EQ(job_files(), 0);
    EXPECT_TRUE(s->remove(7));
    EXPECT_TRUE(s->remove(12345));
    EXPECT_FALSE(s->attach(7, 1));
}

TEST_F(NodeShaperTest, FailedApplyRollsBack) {
    auto s = open();
    k_.fail_nft_add = true;
    auto r = s->apply(req(7, kGbit));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("job 7"), std::string::npos) << r.error().message;
    EXPECT_EQ(k_.classes[2].size(), 2u);
    EXPECT_TRUE(k_.leaves[2].empty());
    EXPECT_TRUE(k_.dirs.empty());
    EXPECT_EQ(job_files(), 0);
    k_.fail_nft_add = false;
    auto ok = s->apply(req(7, kGbit));
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->minor, 7);
}

// `tc qdisc del dev eth0 root` between the prolog's read of the kernel and its
// tc operations: the setup is planned again on what the NIC has now, and the
// other job's class, lost with the root, comes back with it.
TEST_F(NodeShaperTest, ARootDeletedDuringSetupIsPlannedAgain) {
    auto s = open();
    ASSERT_TRUE(s->apply(req(7, kGbit)));
    auto delete_root_of_eth0 = [this] {
        k_.roots.erase(2);
        k_.classes.erase(2);
        k_.leaves.erase(2);
    };
    k_.before_add_class = [&] {
        k_.before_add_class = nullptr;
        delete_root_of_eth0();
    };
    auto r = s->apply(req(8, 2 * kGbit));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(k_.roots[2].handle, tc_handle(0x1a4e, 0));
    EXPECT_EQ(k_.classes[2].size(), 4u);  // :1, :fffe, jobs 7 and 8
    EXPECT_EQ(k_.classes[2][tc_handle(0x1a4e, r->minor)].rate_bits, 2 * kGbit);
    EXPECT_EQ(k_.leaves[2].size(), 2u);
    int replans = 0;
    for (const auto& l : logs_)
        if (l.find("JobId=8: the NICs changed during its setup (NIC eth0: root htb 1a4e:0 is now none); "
                   "planning it again (attempt 2 of 3)") != std::string::npos)
            ++replans;
    EXPECT_EQ(replans, 1) << ::testing::PrintToString(logs_);

    // A root that keeps going: the third attempt's failure is the prolog's, and
    // the job leaves nothing.
    k_.before_add_class = delete_root_of_eth0;
    auto lost = s->apply(req(9, kGbit));
    k_.before_add_class = nullptr;
    ASSERT_FALSE(lost);
    EXPECT_NE(lost.error().message.find("JobId=9"), std::string::npos) << lost.error().message;
    EXPECT_EQ(job_files(), 4);  // jobs 7 and 8, each with its minor claim

    // A failure that is not the NIC changing is not retried.
    const auto nft_adds = [this] {
        int n = 0;
        for (const auto& l : k_.log) n += l.starts_with("nft: job 10: \"");
        return n;
    };
    k_.fail_nft_add = true;
    ASSERT_FALSE(s->apply(req(10, kGbit)));
    k_.fail_nft_add = false;
    EXPECT_EQ(nft_adds(), 1) << ::testing::PrintToString(k_.log);
}

TEST_F(NodeShaperTest, ForeignRootRefusedThenAdopted) {
    k_.roots[2] = RootQdisc{"tbf", tc_handle(1, 0)};
    auto s = open();
    auto r = s->apply(req(7, kGbit));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("eth0"), std::string::npos);
    EXPECT_EQ(job_files(), 0);
    EXPECT_EQ(k_.roots[2].kind, "tbf");
    config_.foreign_qdisc = ForeignQdiscAction::Adopt;
    auto adopting = open();
    ASSERT_TRUE(adopting->apply(req(7, kGbit)));
    EXPECT_EQ(k_.roots[2].kind, "htb");
}

TEST_F(NodeShaperTest, MinorsComeFromStateFilesAcrossProcesses) {
    auto first = open();
    ASSERT_TRUE(first->apply(req(7, kGbit)));
    // Another process (a concurrent prolog) sees minor 7 taken: job 65543 would map there.
    auto second = open();
    auto st = second->apply(req(7 + 0xfffc, kGbit));
    ASSERT_TRUE(st);
    EXPECT_NE(st->minor, 7);
    ASSERT_TRUE(second->remove(7));
    auto third = open();
    auto again = third->apply(req(7, kGbit));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->minor, 7);  // free again, reused
}

TEST_F(NodeShaperTest, ReconcileRemovesDeadJobs) {
    auto s = open();
    for (uint32_t j : {1u, 2u, 3u}) ASSERT_TRUE(s->apply(req(j, kGbit)));
    auto removed = s->reconcile([](const JobState& st) { return st.job_id == 2; });
    ASSERT_TRUE(removed);
    EXPECT_EQ(*removed, (std::vector<uint32_t>{1, 3}));
    ASSERT_EQ(s->list().size(), 1u);
    EXPECT_EQ(s->list()[0].job_id, 2u);
    ASSERT_TRUE(s->remove_all());
    EXPECT_TRUE(k_.roots.empty());
    EXPECT_TRUE(k_.nft_jobs.empty());
    EXPECT_EQ(job_files(), 0);
}

// ---- the parked pool --------------------------------------------------------------

int count_log(const std::vector<std::string>& log, const std::string& what) {
    int n = 0;
    for (const auto& l : log) n += l.find(what) != std::string::npos;
    return n;
}

TEST_F(NodeShaperTest, AnEndedJobsClassIsParkedAndTakenOverByTheNextJob) {
    auto s = open();
    ASSERT_TRUE(s->apply(req(7, kGbit)));
    ASSERT_TRUE(s->apply(req(8, 2 * kGbit, 34)));
    const uint32_t c7 = tc_handle(0x1a4e, 7);
    k_.log.clear();
    ASSERT_TRUE(s->remove(7));
    // Job 8 still runs: 7's class stays, at the parked minimum, with no leaf and
    // no nft element; nothing was created or deleted (no class walk in the kernel).
    EXPECT_EQ(count_log(k_.log, "delete class"), 0) << ::testing::PrintToString(k_.log);
    for (int idx : {2, 3}) {
        ASSERT_TRUE(k_.classes[idx].count(c7));
        EXPECT_EQ(k_.classes[idx][c7].rate_bits, kParkedRateBits);
        EXPECT_EQ(k_.classes[idx][c7].ceil_bits, kParkedRateBits);
        EXPECT_FALSE(k_.leaves[idx].count(c7));
    }
    EXPECT_FALSE(k_.nft_jobs.count(7));
    EXPECT_FALSE(k_.dirs.count("/sys/fs/cgroup/unified/lanes/job_7"));
    EXPECT_EQ(job_files(), 2);  // job_8 and its claim
    ASSERT_EQ(s->parked().size(), 1u);
    EXPECT_EQ(s->parked()[0], (ParkedClass{7, 0x1a4e, {"eth0", "eth1"}}));

    // The next job takes it over: its own rate, prio and leaf; counters from now.
    k_.log.clear();
    auto nine = s->apply(req(9, 3 * kGbit));
    ASSERT_TRUE(nine) << nine.error().message;
    EXPECT_EQ(nine->minor, 7);
    EXPECT_EQ(count_log(k_.log, "delete class"), 0);
    for (int idx : {2, 3}) {
        EXPECT_EQ(k_.classes[idx][c7].rate_bits, 3 * kGbit);
        EXPECT_EQ(k_.leaves[idx][c7], "pfifo");
    }
    EXPECT_TRUE(s->parked().empty());
    EXPECT_EQ(nine->counter_base.at("eth0").bytes, 7000u);  // the fake's constant counters
    auto c9 = s->counters(9);
    ASSERT_TRUE(c9);
    EXPECT_EQ(c9->at("eth0").bytes, 0u);
    EXPECT_EQ(c9->at("eth1").packets, 0u);
    EXPECT_EQ(s->counters(8)->at("eth0").bytes, 8000u);  // a class of its own: as the kernel counts

    // The last job's end deletes its class and the pool: nothing of a job is left.
    ASSERT_TRUE(s->remove(9));
    ASSERT_EQ(s->parked().size(), 1u);
    ASSERT_TRUE(s->remove(8));
    EXPECT_TRUE(s->parked().empty());
    for (int idx : {2, 3}) EXPECT_EQ(k_.classes[idx].size(), 2u);  // root and default class
    EXPECT_EQ(job_files(), 0);
}

TEST_F(NodeShaperTest, ThePoolIsBoundedAndZeroDeletesEveryClass) {
    config_.parked_classes = 1;
    auto s = open();
    for (uint32_t j : {11u, 12u, 13u, 14u}) ASSERT_TRUE(s->apply(req(j, kGbit)));
    ASSERT_TRUE(s->remove(11));
    ASSERT_TRUE(s->remove(12));  // the pool is full: deleted
    ASSERT_EQ(s->parked().size(), 1u);
    EXPECT_EQ(s->parked()[0].minor, 11);
    EXPECT_FALSE(k_.classes[2].count(tc_handle(0x1a4e, 12)));
    EXPECT_EQ(k_.classes[2].size(), 5u);  // root, default, jobs 13 and 14, parked 11

    config_.parked_classes = 0;
    auto off = open();
    ASSERT_TRUE(off->remove(13));
    EXPECT_FALSE(k_.classes[2].count(tc_handle(0x1a4e, 13)));
    auto fifteen = off->apply(req(15, kGbit));  // the pool is not used at all
    ASSERT_TRUE(fifteen);
    EXPECT_EQ(fifteen->minor, 15);
    EXPECT_TRUE(fifteen->counter_base.empty());
    ASSERT_TRUE(off->remove_all());
    EXPECT_TRUE(k_.roots.empty());
    EXPECT_TRUE(off->parked().empty());
}

TEST_F(NodeShaperTest, APoolOnOtherNicsIsNotTakenAndReconcileDrainsAnIdleNode) {
    auto s = open();
    ASSERT_TRUE(s->apply(req(11, kGbit)));
    ASSERT_TRUE(s->apply(req(12, kGbit)));
    ASSERT_TRUE(s->remove(11));
    ASSERT_EQ(s->parked().size(), 1u);
    // A node shaping eth0 only (lanes.toml changed): the eth0+eth1 class is not its.
    config_.nics[0].device = "eth0";
    auto narrow = open();
    auto three = narrow->apply(req(13, kGbit));
    ASSERT_TRUE(three);
    EXPECT_EQ(three->minor, 13);
    // A new minor never lands on a parked one: job 65535 maps to minor 11 first.
    auto far = narrow->apply(req(11 + 0xfffc, kGbit));
    ASSERT_TRUE(far);
    EXPECT_NE(far->minor, 11);
    EXPECT_EQ(narrow->parked().size(), 1u);
    // Every job dead (slurmd restart): reconcile removes them and the pool.
    auto removed = narrow->reconcile([](const JobState&) { return false; });
    ASSERT_TRUE(removed);
    EXPECT_EQ(removed->size(), 3u);
    EXPECT_TRUE(narrow->parked().empty());
    EXPECT_FALSE(k_.classes[3].count(tc_handle(0x1a4e, 11)));
    EXPECT_EQ(k_.classes[2].size(), 2u);
}

TEST_F(NodeShaperTest, SlurmCgroupDirIsUsedOnAUnifiedNode) {
    k_.scopes = {"/sys/fs/cgroup/system.slice/slurmstepd.scope"};
    k_.dirs.insert("/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7");
    auto s = open("gpu1", kUnified);
    EXPECT_TRUE(k_.nft_levels.empty());  // the base ruleset is made by the first apply, not by open
    auto st = s->apply(req(7, kGbit));
    ASSERT_TRUE(st);
    EXPECT_EQ(k_.nft_levels, (std::set<int>{2, 3}));  // our own dirs and Slurm's
    EXPECT_FALSE(st->cgroup_owned);
    EXPECT_EQ(st->cgroup_key, "system.slice/slurmstepd.scope/job_7");  // relative to the mount
    EXPECT_EQ(st->cgroup_id, 77u);
    EXPECT_TRUE(s->attach(7, 99));  // no-op: Slurm placed the tasks
    EXPECT_TRUE(k_.procs.empty());
    // No dir for job 8 yet: still Slurm's (made at its first step), never ours.
    auto own = s->apply(req(8, kGbit));
    ASSERT_TRUE(own);
    EXPECT_FALSE(own->cgroup_owned);
    EXPECT_TRUE(own->cgroup_slurm);
    EXPECT_EQ(own->cgroup, "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_8");
    ASSERT_TRUE(s->remove(7));
    EXPECT_TRUE(k_.dirs.count("/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7"));  // not ours to remove
    EXPECT_TRUE(NodeShaper::attach_task(config_, 8, 5));  // Slurm placed the tasks: nothing to move
}

TEST_F(NodeShaperTest, GsoFollowsTheLowestCeilAndIsRestoredWithTheLastCappedJob) {
    config_.gso_burst_us = 250;
    auto s = open();
    ASSERT_TRUE(s);
    auto uncapped = req(5, kGbit);
    uncapped.net.ceil = Rate{0, 100};  // ceil = the link: no cap, nothing touched
    ASSERT_TRUE(s->apply(uncapped));
    EXPECT_TRUE(k_.gso.empty());
    auto a = req(7, kGbit);
    a.net.ceil = Rate{8 * kGbit, 0};  // 1 GB/s x 250 us = 250000 -> the NIC's own 65536
    ASSERT_TRUE(s->apply(a));
    EXPECT_TRUE(k_.gso.empty()) << "a bound above the NIC's own size changes nothing";
    auto b = req(8, 100'000'000);
    b.net.ceil = Rate{400'000'000, 0};  // 50 MB/s x 250 us = 12500 bytes
    ASSERT_TRUE(s->apply(b));
    EXPECT_EQ(k_.gso[2], (GsoSize{12500, 12500}));
    EXPECT_EQ(k_.gso[3], (GsoSize{12500, 12500}));
    auto c = req(9, 10'000'000);
    c.net.ceil = Rate{20'000'000, 0};  // 2.5 MB/s x 250 us = 625 -> floor of two frames
    ASSERT_TRUE(s->apply(c));
    EXPECT_EQ(k_.gso[2].max, 3028u);
    ASSERT_TRUE(s->remove(9));
    EXPECT_EQ(k_.gso[2].max, 12500u);  // the next lowest ceil
    ASSERT_TRUE(s->remove(8));
    EXPECT_EQ(k_.gso[2], (GsoSize{65536, 65536}));  // restored
    ASSERT_TRUE(s->remove(7));
    ASSERT_TRUE(s->remove(5));
    EXPECT_FALSE(std::filesystem::exists(config_.state_dir + "/gso_eth0"));
    config_.gso_burst_us.reset();  // "off": never touched
    k_.gso.clear();
    auto off = open();
    ASSERT_TRUE(off->apply(b));
    EXPECT_TRUE(k_.gso.empty());
}

TEST_F(NodeShaperTest, AMissingTableIsRebuiltWithEveryJobByTheNextApply) {
    auto s = open();
    ASSERT_TRUE(s->apply(req(7, kGbit, 34)));
    ASSERT_TRUE(s->apply(req(8, kGbit, 8)));
    auto ok = s->check();
    ASSERT_TRUE(ok);
    EXPECT_FALSE(ok->needed) << ok->what;
    k_.nft_table = false;  // nft flush ruleset
    k_.nft_jobs.clear();
    auto found = s->check();
    ASSERT_TRUE(found);
    EXPECT_TRUE(found->needed);
    ASSERT_TRUE(s->apply(req(9, kGbit)));
    EXPECT_EQ(k_.nft_jobs.size(), 3u);
    EXPECT_EQ(k_.nft_jobs[7].dscp, std::optional<uint8_t>(34));
    k_.nft_jobs.clear();
    k_.classes[2].clear();  // and someone deleted classes
    auto again = s->reapply(true);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(again->needed);
    EXPECT_EQ(k_.nft_jobs.size(), 3u);
    EXPECT_EQ(k_.classes[2].size(), 5u);  // :1, :fffe and three jobs
    auto nothing = s->reapply(true);
    ASSERT_TRUE(nothing);
    EXPECT_FALSE(nothing->needed) << nothing->what;
}

TEST_F(NodeShaperTest, UnclassifiedDscpAndCallerGivenCgroup) {
    config_.unclassified_dscp = 10;
    auto s = open("gpu2", kUnified);
    auto r = req(7, kGbit);
    r.cgroup = "system.slice/gpu2_slurmstepd.scope/job_7";
    k_.dirs.insert("/sys/fs/cgroup/system.slice/gpu2_slurmstepd.scope/job_7");
    auto st = s->apply(r);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(k_.unclassified, std::optional<uint8_t>(10));
    EXPECT_FALSE(st->cgroup_owned);
    EXPECT_EQ(st->cgroup, "/sys/fs/cgroup/system.slice/gpu2_slurmstepd.scope/job_7");
    EXPECT_EQ(st->cgroup_level, 3);
    EXPECT_EQ(k_.nft_jobs[7].cgroup, "system.slice/gpu2_slurmstepd.scope/job_7");
    r.job_id = 8;
    r.cgroup = "../etc";
    EXPECT_FALSE(s->apply(r));
    r.cgroup = "system.slice/gone/job_8";
    auto missing = s->apply(r);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("does not exist"), std::string::npos) << missing.error().message;
    ASSERT_TRUE(s->remove(7));
    EXPECT_TRUE(k_.dirs.count("/sys/fs/cgroup/system.slice/gpu2_slurmstepd.scope/job_7"));  // not ours
}

const std::optional<std::string> kSlurmJob7 = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7";

TEST(NodeShaperCgroup, PlacementAndLevels) {
    auto hybrid = place_job_cgroup("auto", kHybrid, 7, std::nullopt);
    ASSERT_TRUE(hybrid);
    EXPECT_EQ(hybrid->dir, "/sys/fs/cgroup/unified/lanes/job_7");
    EXPECT_EQ(hybrid->parent, "/sys/fs/cgroup/unified/lanes");
    EXPECT_EQ(hybrid->key, "lanes/job_7");  // relative to the cgroup2 mount (the marker's key)
    EXPECT_EQ(hybrid->level, 2);
    EXPECT_TRUE(hybrid->owned);
    // Slurm's dir is only taken on a unified node and when it exists.
    EXPECT_TRUE(place_job_cgroup("auto", kHybrid, 7, kSlurmJob7)->owned);
    auto slurm = place_job_cgroup("auto", kUnified, 7, kSlurmJob7);
    EXPECT_EQ(slurm->dir, "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7");
    EXPECT_EQ(slurm->level, 3);
    EXPECT_FALSE(slurm->owned);
    auto custom = place_job_cgroup("/sys/fs/cgroup/unified/site/lanes/", kHybrid, 9, std::nullopt);
    ASSERT_TRUE(custom);
    EXPECT_EQ(custom->dir, "/sys/fs/cgroup/unified/site/lanes/job_9");
    EXPECT_EQ(custom->level, 3);
    // A mount elsewhere: nft's key climbs out of /sys/fs/cgroup.
    auto elsewhere = place_job_cgroup("auto", Cgroup2Mount{"/run/cg2", "/"}, 7, std::nullopt);
    EXPECT_EQ(elsewhere->key, "lanes/job_7");
    // Inside a cgroup namespace-like root, levels count from the hierarchy root.
    EXPECT_EQ(place_job_cgroup("auto", Cgroup2Mount{"/sys/fs/cgroup", "/machine/c1"}, 7, std::nullopt)->level, 4);
    for (const char* bad :
         {"relative/path", "/sys/fs/cgroup/cpu/x", "/sys/fs/cgroup/unified/../x", "/sys/fs/cgroup/unified"})
        EXPECT_FALSE(place_job_cgroup(bad, kHybrid, 7, std::nullopt)) << bad;
    EXPECT_EQ(*cgroup_levels("auto", kHybrid), std::vector<int>{2});
    EXPECT_EQ(*cgroup_levels("auto", kUnified), std::vector<int>{2});
    EXPECT_EQ(*cgroup_levels("auto", kUnified, {3, 3, 4}), (std::vector<int>{2, 3, 4}));
    EXPECT_EQ(*cgroup_levels("auto", kHybrid, {3}), std::vector<int>{2});  // Slurm's tree is not in a hybrid mount
}

TEST(NodeShaperCgroup, Mountinfo) {
    const char* hybrid =
        "25 30 0:23 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
        "31 25 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755\n"
        "32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
        "33 31 0:28 / /sys/fs/cgroup/systemd rw shared:11 - cgroup cgroup rw,name=systemd\n";
    auto m = parse_mountinfo_cgroup2(hybrid);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->mount_point, "/sys/fs/cgroup/unified");
    EXPECT_EQ(m->root, "/");
    auto spaced = parse_mountinfo_cgroup2("40 1 0:30 /a\\040b /mnt/cg\\0402 rw - cgroup2 none rw\n");
    ASSERT_TRUE(spaced);
    EXPECT_EQ(spaced->mount_point, "/mnt/cg 2");
    EXPECT_EQ(spaced->root, "/a b");
    EXPECT_FALSE(parse_mountinfo_cgroup2("33 31 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"));
    EXPECT_EQ(relative_path("/sys/fs/cgroup/unified/x", "/sys/fs/cgroup"), "unified/x");
    EXPECT_EQ(relative_path("/run/x", "/sys/fs/cgroup"), "../../../run/x");
}

TEST(NodeShaperStateFile, RoundTripAndErrors) {
    JobState s;
    s.job_id = 4000000000u;
    s.class_name = "inference";
    s.minor = 0x1234;
    s.devices = {{"eth0", 10 * kGbit, 25 * kGbit}, {"ib0", 400 * kGbit, 400 * kGbit}};
    s.net.dscp = 46;
    s.net.rate = Rate{0, 40};
    s.net.ceil = Rate{400 * kGbit, 0};
    s.net.rank = -2;
    s.net.rdma_traffic_class = 184;
    s.net.rdma_service_level = 3;
    s.cgroup = "/sys/fs/cgroup/unified/lanes/job_4000000000";
    s.cgroup_key = "unified/lanes/job_4000000000";
    s.cgroup_owned = true;
    s.cgroup_id = 123456789012345ull;
    s.cgroup_level = 3;
    s.root_major = 0x1b00;
    s.dscp_marked = 46;
    s.counter_base["eth0"] = CounterBase{123456789012ull, 99, 3, 4};
    auto text = format_job_state(s);
    auto back = parse_job_state(text, "job_4000000000");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, s);
    // Keyed on Slurm's job dir, not yet made (the prolog with PrologFlags=Contain).
    s.cgroup = "/sys/fs/cgroup/system.slice/n1_slurmstepd.scope/job_4000000000";
    s.cgroup_key = "system.slice/n1_slurmstepd.scope/job_4000000000";
    s.cgroup_owned = false;
    s.cgroup_slurm = true;
    s.cgroup_id = 0;
    back = parse_job_state(format_job_state(s), "job_4000000000");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, s);

    struct Bad {
        const char* text;
        const char* says;
    } bad[] = {
        {"", "empty"},
        {"something else\n", "not a Lanes job state file"},
        {"lanes-job-state 1\njob_id=7\n", "minor missing"},
        {"lanes-job-state 1\njob_id=7\nminor=x\n", ":3: bad value for minor"},
        {"lanes-job-state 1\njob_id=7\nminor=7\ncolour=red\n", ":4: unknown key \"colour\""},
        {"lanes-job-state 1\njob_id=7\nminor=7\ndscp=64\n", "bad value for dscp"},
        {"lanes-job-state 1\njob_id=7\nminor=7\nrate=150%\n", "bad value for rate"},
        {"lanes-job-state 1\njob_id=7\nminor=7\ndevice=eth0 5\n", "bad value for device"},
        {"lanes-job-state 1\njob_id=7\nminor=7\nnoequals\n", "expected key=value"},
        {"lanes-job-state 1\njob_id=7\nminor=7\ncounter_base=eth0 1 2 3\n", "bad value for counter_base"},
    };
    for (const auto& b : bad) {
        auto r = parse_job_state(b.text, "f");
        ASSERT_FALSE(r) << b.text;
        EXPECT_NE(r.error().message.find(b.says), std::string::npos) << r.error().message;
    }
}

TEST(NodeShaperStateFile, ParkedClassRecordRoundTripsAndBadOnesAreNamed) {
    ParkedClass p{0x1234, 0x1a4e, {"eth0", "ib0"}};
    auto back = parse_parked_class(format_parked_class(p), "parked/1234");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, p);
    struct Bad {
        const char* text;
        const char* says;
    } bad[] = {
        {"", "empty"},
        {"lanes-job-state 1\n", "not a Lanes parked class record"},
        {"lanes-parked-class 1\nminor=1\nroot_major=6734\ndevice=eth0\n", ":2: bad value for minor"},
        {"lanes-parked-class 1\nminor=7\nroot_major=65535\ndevice=eth0\n", ":3: bad value for root_major"},
        {"lanes-parked-class 1\nminor=7\nroot_major=6734\n", "device missing"},
        {"lanes-parked-class 1\nminor=7\nroot_major=6734\ndevice=eth 0\n", "bad value for device"},
        {"lanes-parked-class 1\nminor=7\njob_id=9\n", "unknown key \"job_id\""},
    };
    for (const auto& b : bad) {
        auto r = parse_parked_class(b.text, "parked/0007");
        ASSERT_FALSE(r) << b.text;
        EXPECT_NE(r.error().message.find(b.says), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find("parked/0007"), std::string::npos) << r.error().message;
    }
}

TEST(NodeShaperStateFile, StoreSavesLoadsClaimsAndLocks) {
    char tmpl[] = "/tmp/lanes-unit-store.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    std::string dir = std::string(tmpl) + "/state";
    {
        JobStateStore store(dir);
        ASSERT_TRUE(store.prepare());
        auto lock = store.lock();
        ASSERT_TRUE(lock);
        JobState s;
        s.job_id = 7;
        s.minor = 7;
        ASSERT_TRUE(store.save(s));
        struct stat st {};
        ASSERT_EQ(::stat(store.job_path(7).c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0600u);
        EXPECT_EQ((*store.load(7))->minor, 7);
        EXPECT_FALSE(*store.load(8));
        ASSERT_TRUE(store.claim_minor(7, 7));
        ASSERT_TRUE(store.claim_minor(7, 7));   // own claim again: fine
        EXPECT_FALSE(store.claim_minor(7, 8));  // held by job 7, which has state
        EXPECT_EQ(store.minor_owner(7), 7u);
        ASSERT_TRUE(store.claim_minor(9, 9));   // job 9 has no state file: stale ...
        EXPECT_TRUE(store.claim_minor(9, 10));  // ... so job 10 may take it
        EXPECT_EQ(store.minor_owner(9), 10u);
        EXPECT_TRUE(store.release_minor(9, 9));  // not the holder: no-op
        EXPECT_EQ(store.minor_owner(9), 10u);
        EXPECT_EQ(store.load_all().size(), 1u);
        std::FILE* f = std::fopen((dir + "/job_8").c_str(), "w");
        std::fputs("garbage\n", f);
        std::fclose(f);
        std::vector<std::string> errors;
        EXPECT_EQ(store.load_all(&errors).size(), 1u);
        EXPECT_EQ(errors.size(), 1u);
        ASSERT_TRUE(store.erase(7));
        ASSERT_TRUE(store.erase(7));
    }
    JobStateStore relative("run/lanes");
    EXPECT_FALSE(relative.prepare());
    std::filesystem::remove_all(tmpl);
}

// ---- converge: one desired state, the kernel brought back to it ------------------

std::vector<std::string> repairs_of(const ConvergeReport& r) {
    std::vector<std::string> out;
    for (const auto& x : r.repairs)
        out.push_back(x.object + " " + x.cause + " " + std::to_string(x.job_id) + " " + x.device);
    return out;
}

TEST_F(NodeShaperTest, ConvergeRepairsEachKindOfDriftAndThenNothing) {
    auto s = open();
    ASSERT_TRUE(s->apply(req(7, kGbit, 34)));
    ASSERT_TRUE(s->apply(req(8, kGbit, 8)));
    auto clean = s->converge();
    ASSERT_TRUE(clean) << clean.error().message;
    EXPECT_TRUE(clean->repairs.empty()) << ::testing::PrintToString(repairs_of(*clean));
    EXPECT_EQ(clean->jobs, 2u);
    const uint32_t c7 = tc_handle(0x1a4e, 7), c8 = tc_handle(0x1a4e, 8);
    auto converge_twice = [&](std::vector<std::string> want) {
        auto r = s->converge();
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(repairs_of(*r), want);
        auto again = s->converge();
        ASSERT_TRUE(again) << again.error().message;
        EXPECT_TRUE(again->repairs.empty()) << ::testing::PrintToString(repairs_of(*again));
    };
    // `tc class change ... ceil` by hand.
    const HtbParams want7 = k_.classes[2][c7];
    k_.classes[2][c7].ceil_bits = 25 * kGbit;
    k_.classes[2][c7].prio = 0;
    converge_twice({"class changed 7 eth0"});
    EXPECT_EQ(k_.classes[2][c7], want7);
    // A leaf qdisc deleted.
    k_.leaves[2].erase(c8);
    converge_twice({"leaf_qdisc missing 8 eth0"});
    EXPECT_EQ(k_.leaves[2][c8], "pfifo");
    // nft flush ruleset, then one element lost.
    k_.nft_table = false;
    k_.nft_jobs.clear();
    converge_twice({"nft_table missing 0 "});
    EXPECT_EQ(k_.nft_jobs.size(), 2u);
    EXPECT_EQ(k_.nft_jobs[7].dscp, std::optional<uint8_t>(34));
    k_.nft_jobs.erase(8);
    converge_twice({"nft_element missing 8 "});
    // `tc qdisc del dev eth1 root`: the root, then both jobs' classes.
    k_.roots.erase(3);
    k_.classes.erase(3);
    k_.leaves.erase(3);
    converge_twice({"root_qdisc missing 0 eth1", "class missing 7 eth1", "class missing 8 eth1"});
    EXPECT_EQ(k_.classes[3].size(), 4u);  // :1, :fffe and two jobs
    EXPECT_EQ(k_.leaves[3].size(), 2u);
    // The default class changed by hand.
    k_.classes[2][tc_handle(0x1a4e, kDefaultMinor)].ceil_bits = 1 * kGbit;
    converge_twice({"root_qdisc changed 0 eth0"});
}

TEST_F(NodeShaperTest, ConvergeDryRunChangesNothing) {
    auto s = open();
    ASSERT_TRUE(s->apply(req(7, kGbit)));
    k_.nft_table = false;
    k_.nft_jobs.clear();
    k_.log.clear();
    auto r = s->converge(true);
    ASSERT_TRUE(r);
    EXPECT_EQ(repairs_of(*r), std::vector<std::string>{"nft_table missing 0 "});
    EXPECT_TRUE(k_.log.empty()) << ::testing::PrintToString(k_.log);
    auto check = s->check();
    ASSERT_TRUE(check);
    EXPECT_TRUE(check->needed);
    EXPECT_FALSE(k_.nft_table);
}

TEST_F(NodeShaperTest, ConvergeLeavesAForeignRootAloneAndSaysSo) {
    auto s = open();
    ASSERT_TRUE(s->apply(req(7, kGbit)));
    k_.roots[2] = RootQdisc{"fq", 0x80010000};  // someone else's, replacing ours
    k_.classes.erase(2);
    k_.leaves.erase(2);
    k_.log.clear();
    auto r = s->converge();
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->repairs.empty()) << ::testing::PrintToString(repairs_of(*r));
    EXPECT_EQ(k_.roots[2].kind, "fq");
    ASSERT_FALSE(r->problems.empty());
    EXPECT_NE(r->problems[0].find("eth0"), std::string::npos) << r->problems[0];
    config_.foreign_qdisc = ForeignQdiscAction::Adopt;
    auto adopt = open();
    auto a = adopt->converge();
    ASSERT_TRUE(a);
    EXPECT_EQ(repairs_of(*a), (std::vector<std::string>{"root_qdisc changed 0 eth0", "class missing 7 eth0"}));
    EXPECT_EQ(k_.roots[2].handle, tc_handle(0x1a4e, 0));
}

TEST_F(NodeShaperTest, ANicAbsentAtPrologIsShapedOnceItIsThere) {
    auto s = open();
    ASSERT_TRUE(s->apply(req(7, kGbit)));
    k_.ifindex["eth2"] = 5;  // hot-plugged, or renamed/recreated, after the prolog
    auto r = s->converge();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(repairs_of(*r), (std::vector<std::string>{"root_qdisc missing 0 eth2", "pending_nic link_up 7 eth2"}));
    EXPECT_EQ(k_.classes[5][tc_handle(0x1a4e, 7)].rate_bits, kGbit);
    auto st = s->list();
    ASSERT_EQ(st.size(), 1u);
    ASSERT_EQ(st[0].devices.size(), 3u);
    EXPECT_EQ(st[0].devices[2].device, "eth2");
    auto again = s->converge();
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->repairs.empty()) << ::testing::PrintToString(repairs_of(*again));
    // The epilog removes the class there too.
    ASSERT_TRUE(s->remove(7));
    EXPECT_FALSE(k_.classes[5].count(tc_handle(0x1a4e, 7)));
}

// tc keeps a down device's qdiscs and classes (they hold from link up): a NIC
// down at the prolog is shaped there, with nothing left for converge at link up.
// It used to be recorded pending and shaped only by a converge after link up.
TEST_F(NodeShaperTest, ANicDownAtPrologIsShapedAtTheProlog) {
    k_.down = {"eth1"};
    auto s = open();
    auto st = s->apply(req(7, kGbit));
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(st->devices.size(), 2u);
    EXPECT_TRUE(st->pending_devices.empty());
    EXPECT_EQ(k_.classes[3][tc_handle(0x1a4e, 7)].rate_bits, kGbit);
    k_.down.clear();  // the link comes up
    auto r = s->converge();
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->repairs.empty()) << ::testing::PrintToString(repairs_of(*r));
}

// Every managed NIC down (a switch reboot): the prolog shapes them all; it used
// to fail ("no NIC ... can be shaped") and Slurm drained the node.
TEST_F(NodeShaperTest, EveryNicDownIsShapedNotAFailedProlog) {
    k_.down = {"eth0", "eth1"};
    auto s = open();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->nics().size(), 2u);
    auto st = s->apply(req(7, kGbit));
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(st->devices.size(), 2u);
    EXPECT_TRUE(st->pending_devices.empty());
}

// Down and no speed known (a physical NIC reports none without a link, and
// [[nodes.nic]] sets none): the only NIC that cannot be shaped now, named with
// the fix; next to a NIC that works it is pending.
TEST_F(NodeShaperTest, ADownNicOfUnknownSpeedIsPendingOrNamed) {
    k_.down = {"ib0"};
    config_.nics[0].device = "ib*";
    auto only = NodeShaper::open_with(config_, "gpu1", std::make_unique<FakeTc>(k_), std::make_unique<FakeMarker>(k_),
                                      std::make_unique<FakeCgroups>(k_, kHybrid));
    ASSERT_FALSE(only);
    EXPECT_NE(only.error().message.find("NIC ib0: link is down and its speed unknown until it is up"),
              std::string::npos)
        << only.error().message;
    EXPECT_NE(only.error().message.find("set link_speed in its [[nodes.nic]]"), std::string::npos)
        << only.error().message;
    config_.nics[0].device = "[ei]*";
    auto s = open();
    auto st = s->apply(req(7, kGbit));
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(st->pending_devices, std::vector<std::string>{"ib0"});
}

// A NIC named in [[nodes.nic]] that is absent (renamed, not yet created): pending.
TEST_F(NodeShaperTest, AnAbsentNamedNicIsPending) {
    NicSelector named;
    named.nodes = "gpu[1-4]";
    named.device = "eth7";
    named.line = 14;
    config_.nics.push_back(named);
    auto s = open();
    auto st = s->apply(req(7, kGbit));
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ(st->pending_devices, std::vector<std::string>{"eth7"});
}

TEST_F(NodeShaperTest, AShiftedCeilIsDesiredStateAndSurvivesReapply) {
    auto s = open();
    auto r7 = req(7, 100'000'000);
    r7.net.ceil = Rate{10 * kGbit, 0};
    ASSERT_TRUE(s->apply(r7));
    const uint32_t c7 = tc_handle(0x1a4e, 7);
    auto set = s->set_ceils({CeilChange{7, "eth0", 2 * kGbit}, CeilChange{7, "eth1", 1}, CeilChange{9, "eth0", kGbit}},
                            "window busy: demand 50 > 10");
    ASSERT_TRUE(set) << set.error().message;
    ASSERT_EQ(set->size(), 3u);
    EXPECT_EQ((*set)[0].from_bits, 10 * kGbit);
    EXPECT_EQ((*set)[0].to_bits, 2 * kGbit);
    EXPECT_EQ((*set)[1].to_bits, 100'000'000u);  // never below the job's rate
    EXPECT_NE((*set)[2].error, "");              // no such job: nothing applied
    EXPECT_EQ(k_.classes[2][c7].ceil_bits, 2 * kGbit);
    auto st = s->list();
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].devices[0].ceil_now_bits, 2 * kGbit);
    EXPECT_EQ(st[0].devices[0].ceil_bits, 10 * kGbit);
    EXPECT_EQ(st[0].ceil_cause, "window busy: demand 50 > 10");
    // A firewall reload's reapply, a `tc qdisc del`: the busy ceil stays.
    k_.roots.erase(2);
    k_.classes.erase(2);
    k_.leaves.erase(2);
    auto re = s->reapply(true);
    ASSERT_TRUE(re) << re.error().message;
    EXPECT_TRUE(re->needed);
    EXPECT_EQ(k_.classes[2][c7].ceil_bits, 2 * kGbit);
    // The same request again (a second prolog run) keeps it as well.
    ASSERT_TRUE(s->apply(r7));
    EXPECT_EQ(k_.classes[2][c7].ceil_bits, 2 * kGbit);
    // The shift ends: back to the job's own ceil, the cause cleared.
    set = s->set_ceils({CeilChange{7, "eth0", 10 * kGbit}, CeilChange{7, "eth1", 10 * kGbit}}, "window idle");
    ASSERT_TRUE(set);
    EXPECT_EQ(k_.classes[2][c7].ceil_bits, 10 * kGbit);
    st = s->list();
    EXPECT_EQ(st[0].devices[0].ceil_now_bits, 0u);
    EXPECT_EQ(st[0].ceil_cause, "");
    auto after = s->converge();
    ASSERT_TRUE(after);
    EXPECT_TRUE(after->repairs.empty()) << ::testing::PrintToString(repairs_of(*after));
}

TEST_F(NodeShaperTest, ShiftsAndRepairsUseTheJobsOwnRoot) {
    auto old_root = open();
    auto r7 = req(7, 100'000'000);
    r7.net.ceil = Rate{kGbit, 0};
    ASSERT_TRUE(old_root->apply(r7));
    config_.root_handle_major = 0x1b00;  // lanes.toml changed while job 7 runs
    auto s = open();
    auto set = s->set_ceils({CeilChange{7, "eth0", 500'000'000}}, "busy");
    ASSERT_TRUE(set);
    EXPECT_EQ((*set)[0].error, "");
    EXPECT_EQ(k_.classes[2][tc_handle(0x1a4e, 7)].ceil_bits, 500'000'000u);
    EXPECT_FALSE(k_.classes[2].count(tc_handle(0x1b00, 7)));
    k_.classes[2].erase(tc_handle(0x1a4e, 7));
    auto r = s->converge();
    ASSERT_TRUE(r);
    EXPECT_EQ(repairs_of(*r), std::vector<std::string>{"class missing 7 eth0"});
    EXPECT_EQ(k_.roots[2].handle, tc_handle(0x1a4e, 0));  // the running jobs' root kept
    EXPECT_EQ(k_.classes[2][tc_handle(0x1a4e, 7)].ceil_bits, 500'000'000u);
}

TEST(ConvergePlan, NftMissingTableRebuildsEveryJobElseOnlyTheMissing) {
    std::vector<NftEnsureJob> wanted{NftEnsureJob{7, "lanes/job_7", tc_handle(0x1a4e, 7), 34, 70, 2},
                                     NftEnsureJob{8, "lanes/job_8", tc_handle(0x1a4e, 8), {}, 80, 2}};
    auto gone = plan_converge_nft(wanted, MarkerCheck{false, {7, 8}});
    EXPECT_TRUE(gone.rebuild);
    EXPECT_EQ(gone.marks, wanted);
    ASSERT_EQ(gone.repairs.size(), 1u);
    EXPECT_EQ(gone.repairs[0].object, "nft_table");
    auto one = plan_converge_nft(wanted, MarkerCheck{true, {8}});
    EXPECT_FALSE(one.rebuild);
    ASSERT_EQ(one.marks.size(), 1u);
    EXPECT_EQ(one.marks[0].job_id, 8u);
    EXPECT_EQ(one.repairs[0].object, "nft_element");
    EXPECT_TRUE(plan_converge_nft(wanted, MarkerCheck{true, {}}).repairs.empty());
    EXPECT_TRUE(plan_converge_nft({}, MarkerCheck{false, {}}).repairs.empty());  // no job: no table needed
}

TEST(ConvergePlan, UnshapedRecordsAndOtherRootsAreNotTouched) {
    NodeConfig config;
    JobState unshaped;
    unshaped.job_id = 3;
    unshaped.unshaped = "no network settings";
    JobState job;
    job.job_id = 7;
    job.minor = 7;
    job.root_major = 0x1a4e;
    job.devices = {JobDevice{"eth0", kGbit, 2 * kGbit, 0}};
    NicObserved eth0;
    eth0.nic = NicFacts{"eth0", 2, 25 * kGbit};
    eth0.tc.root = RootQdisc{"htb", tc_handle(0x1a4e, 0)};
    const EnsureRoot root = plan_root(config, eth0.nic, 0x1a4e);
    auto seen = [](uint32_t id, const HtbParams& p) {
        return ObservedClass{id, 0, "htb", p.rate_bits, p.ceil_bits, p.prio, p.quantum};
    };
    eth0.tc.classes = {seen(tc_handle(0x1a4e, 1), root.parent), seen(tc_handle(0x1a4e, kDefaultMinor), root.fallback),
                       seen(tc_handle(0x1a4e, 7), plan_job_class(job, job.devices[0], 2).htb),
                       // a class under our root that is no job's (parked, or an admin's): left alone
                       ObservedClass{tc_handle(0x1a4e, 0x99), 0, "htb", 8000, 8000, 7, 1514}};
    eth0.tc.qdiscs = {ObservedQdisc{tc_handle(7, 0), tc_handle(0x1a4e, 7), "pfifo"}};
    auto plan = plan_converge_tc(config, {unshaped, job}, {eth0}, "pfifo");
    EXPECT_TRUE(plan.steps.empty());
    EXPECT_TRUE(plan.problems.empty());
    EXPECT_TRUE(plan.changed_jobs.empty());
    // The ceil in force (a shift) is what the class must show.
    job.devices[0].ceil_now_bits = kGbit;
    plan = plan_converge_tc(config, {job}, {eth0}, "pfifo");
    ASSERT_EQ(plan.steps.size(), 1u);
    EXPECT_EQ(plan.steps[0].repair.object, "class");
    EXPECT_EQ(plan.steps[0].repair.cause, "changed");
    ASSERT_EQ(plan.steps[0].operations.size(), 1u);
    EXPECT_EQ(std::get<AddClass>(plan.steps[0].operations[0]).htb.ceil_bits, kGbit);
}

TEST(ConvergePlan, ANicThatCameUpGetsTheJobsIngressClassToo) {
    NodeConfig config;
    JobState job;
    job.job_id = 7;
    job.minor = 7;
    job.root_major = 0x1a4e;
    job.net.rate = Rate{kGbit, 0};
    job.net.ingress_rate = Rate{2 * kGbit, 0};
    job.devices = {JobDevice{"eth0", kGbit, kGbit, 0}};
    job.ingress_devices = {JobDevice{"eth0", 2 * kGbit, 2 * kGbit, 0}};
    job.pending_devices = {"eth1"};
    NicObserved eth1;
    eth1.nic = NicFacts{"eth1", 3, 25 * kGbit};
    auto plan = plan_converge_tc(config, {job}, {eth1}, "pfifo");
    ASSERT_EQ(plan.changed_jobs.size(), 1u);
    const JobState& grown = plan.changed_jobs[0];
    ASSERT_EQ(grown.devices.size(), 2u);
    EXPECT_EQ(grown.devices[1].device, "eth1");
    ASSERT_EQ(grown.ingress_devices.size(), 2u);
    EXPECT_EQ(grown.ingress_devices[1].device, "eth1");
    EXPECT_EQ(grown.ingress_devices[1].rate_bits, 2 * kGbit);
    EXPECT_TRUE(grown.pending_devices.empty());
    // A job without ingress caps grows on egress only.
    job.net.ingress_rate.reset();
    job.ingress_devices.clear();
    plan = plan_converge_tc(config, {job}, {eth1}, "pfifo");
    ASSERT_EQ(plan.changed_jobs.size(), 1u);
    EXPECT_TRUE(plan.changed_jobs[0].ingress_devices.empty());
    // A NIC still down (speed unknown) grows neither.
    job.net.ingress_rate = Rate{2 * kGbit, 0};
    eth1.nic.link_speed_bits = 0;
    plan = plan_converge_tc(config, {job}, {eth1}, "pfifo");
    EXPECT_TRUE(plan.changed_jobs.empty());
}

TEST(JobStateFile, CeilInForcePendingNicsRoundTrip) {
    JobState s;
    s.job_id = 7;
    s.minor = 7;
    s.root_major = 0x1a4e;
    s.devices = {JobDevice{"eth0", 100, 1000, 500}, JobDevice{"eth1", 100, 1000, 0}};
    s.ceil_cause = "window busy: p99 120ms > 80ms";
    s.pending_devices = {"eth2"};
    auto back = parse_job_state(format_job_state(s), "job_7");
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, s);
    // A state written before the ceil in force was kept still reads.
    auto old = parse_job_state("lanes-job-state 1\njob_id=7\nminor=7\ndevice=eth0 100 1000\n", "job_7");
    ASSERT_TRUE(old) << old.error().message;
    EXPECT_EQ(old->devices[0].ceil_in_force(), 1000u);
    EXPECT_FALSE(parse_job_state("lanes-job-state 1\njob_id=7\nminor=7\ndevice=eth0 100 1000 x\n", "job_7"));
}

}  // namespace
}  // namespace lanes
