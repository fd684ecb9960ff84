// SPDX-License-Identifier: GPL-2.0-or-later
// Node shaper setup/teardown cost per job, in a private network namespace on a
// veth, with 1, 100, 500 and 1000 jobs already on the NIC; and side by side the
// same work for one job done the classic way (fork/exec of tc and nft).
//
//   bench_shaper [--iterations N] [--levels 1,100,500,1000] [--exec-iterations N]
//                [--packets N] [--reps N]
//
// Setup/teardown: --iterations per level, spread over --reps rounds; each round
// walks every level (background jobs added and removed between them), so the
// levels are measured side by side and the machine's load hits them alike.
//
// Per-packet cost: a bounded UDP blast (--packets x 64-byte datagrams, one
// sendto each, --reps times) from a process inside the measured job's cgroup, out
// of the shaped NIC to a static neighbour (the veth peer drops the frames: not its
// MAC). The figure is the sender's CPU time (user + system, which includes the
// output path: nftables, HTB, veth) per packet, median of the repetitions; side by
// side without any Lanes (measured first) and at each job count. The classifier's
// own cost is measured on its own: the same job's sender at the top level, with
// and without the nft table, alternating round by round (--reps rounds).
//
// Needs root. Creates its own network namespace (unshare; it dies with the
// process), a private mount namespace with a tmpfs on /run for the state dir (as
// on a production node), and a cgroup2 dir <mount>/lanes-bench-<pid>, removed at
// the end. Prints median/p99 per phase, the time per kernel
// interface, and the exec/library ratio.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "node/cgroup_tree.hpp"
#include "node/node_shaper.hpp"
#include "node/packet_marker.hpp"
#include "node/traffic_control.hpp"

using namespace lanes;
using Clock = std::chrono::steady_clock;

namespace {

std::map<std::string, std::pair<double, long>> g_spent;  // interface -> (us, calls)

struct Timer {
    const char* name;
    Clock::time_point t0 = Clock::now();
    ~Timer() {
        auto& s = g_spent[name];
        s.first += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        s.second++;
    }
};

// Timing decorators around the real kernel interfaces.
class TimedTc final : public TrafficControl {
public:
    explicit TimedTc(std::unique_ptr<TrafficControl> in) : in_(std::move(in)) {}
    Result<std::vector<std::string>> devices() override { return in_->devices(); }
    Result<int> ifindex(const std::string& d) override {
        Timer t{"tc: ifindex"};
        return in_->ifindex(d);
    }
    Result<std::string> route_device(const std::string& p) override { return in_->route_device(p); }
    std::optional<uint64_t> link_speed_bits(const std::string& d) override { return in_->link_speed_bits(d); }
    Result<RootQdisc> root_qdisc(int i) override {
        Timer t{"tc: get root qdisc"};
        return in_->root_qdisc(i);
    }
    bool qdisc_kind_available(const std::string& k) override { return in_->qdisc_kind_available(k); }
    Result<void> ensure_root(const EnsureRoot& o) override {
        Timer t{"tc: ensure root (2 classes)"};
        return in_->ensure_root(o);
    }
    Result<void> add_class(const AddClass& o) override {
        Timer t{"tc: add class"};
        return in_->add_class(o);
    }
    Result<void> add_leaf_qdisc(const AddLeafQdisc& o) override {
        Timer t{"tc: add leaf qdisc"};
        return in_->add_leaf_qdisc(o);
    }
    Result<void> delete_leaf_qdisc(const DeleteLeafQdisc& o) override {
        Timer t{"tc: delete leaf qdisc"};
        return in_->delete_leaf_qdisc(o);
    }
    Result<void> delete_class(const DeleteClass& o) override {
        Timer t{"tc: delete class"};
        return in_->delete_class(o);
    }
    Result<void> delete_root(const DeleteRoot& o) override { return in_->delete_root(o); }
    Result<ClassCounters> class_counters(int i, uint32_t c) override { return in_->class_counters(i, c); }
    Result<std::vector<uint32_t>> classes(int i, uint16_t m) override { return in_->classes(i, m); }
    Result<GsoSize> gso_size(int i) override {
        Timer t{"tc: get gso size"};
        return in_->gso_size(i);
    }
    Result<void> set_gso_size(int i, const GsoSize& g) override {
        Timer t{"tc: set gso size"};
        return in_->set_gso_size(i, g);
    }
    std::optional<bool> link_down(const std::string& d) override {
        Timer t{"tc: link state"};
        return in_->link_down(d);
    }
    Result<TcSnapshot> snapshot(int i) override {
        Timer t{"tc: dump root, classes, qdiscs (converge)"};
        return in_->snapshot(i);
    }

private:
    std::unique_ptr<TrafficControl> in_;
};

class TimedMarker final : public PacketMarker {
public:
    explicit TimedMarker(std::unique_ptr<PacketMarker> in) : in_(std::move(in)) {}
    void set_base(const MarkerBase& b) override { in_->set_base(b); }
    Result<MarkedCgroup> resolve(const std::string& c) override { return in_->resolve(c); }
    Result<MarkedCgroup> add_job(const NftEnsureJob& o, bool* rebuilt) override {
        Timer t{"nft: add job (check base + 1 transaction)"};
        return in_->add_job(o, rebuilt);
    }
    Result<void> remove_job(const NftRemoveJob& o) override {
        Timer t{"nft: remove job (1 transaction)"};
        return in_->remove_job(o);
    }
    Result<MarkerCheck> check(const std::vector<NftEnsureJob>& j) override { return in_->check(j); }
    Result<void> rebuild(const std::vector<NftEnsureJob>& j) override { return in_->rebuild(j); }
    Result<void> remove_all() override { return in_->remove_all(); }

private:
    std::unique_ptr<PacketMarker> in_;
};

class TimedCgroups final : public CgroupTree {
public:
    explicit TimedCgroups(std::unique_ptr<CgroupTree> in) : in_(std::move(in)) {}
    Result<Cgroup2Mount> mount() override { return in_->mount(); }
    bool exists(const std::string& d) override { return in_->exists(d); }
    Result<uint64_t> ensure_dir(const std::string& d) override {
        Timer t{"cgroup: mkdir"};
        return in_->ensure_dir(d);
    }
    Result<uint64_t> dir_id(const std::string& d) override { return in_->dir_id(d); }
    Result<void> attach(const std::string& d, pid_t p) override { return in_->attach(d, p); }
    Result<void> remove_dir(const std::string& d, const std::string& p) override {
        Timer t{"cgroup: rmdir"};
        return in_->remove_dir(d, p);
    }
    Result<std::vector<pid_t>> pids(const std::string& d) override { return in_->pids(d); }
    std::vector<std::string> slurm_stepd_scopes() override { return in_->slurm_stepd_scopes(); }

private:
    std::unique_ptr<CgroupTree> in_;
};

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Stats {
    double median, p99;
};
Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))]; };
    return {at(0.5), at(0.99)};
}

// CPU ns per packet of a UDP blast from a child placed in `cgroup_dir` first
// (sockets are marked by the cgroup they were created in).
// `priority` != 0: the socket's SO_PRIORITY, i.e. the HTB class without nftables.
double blast_ns_per_packet(const std::string& cgroup_dir, int packets, uint32_t priority = 0) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        ::close(fds[0]);
        double result = -1;
        FILE* procs = std::fopen((cgroup_dir + "/cgroup.procs").c_str(), "w");
        if (procs && std::fprintf(procs, "%d", getpid()) > 0 && std::fclose(procs) == 0) {
            int sock = ::socket(AF_INET, SOCK_DGRAM, 0);
            int prio = static_cast<int>(priority);
            if (priority != 0 && ::setsockopt(sock, SOL_SOCKET, SO_PRIORITY, &prio, sizeof prio) != 0) packets = 0;
            sockaddr_in to{};
            to.sin_family = AF_INET;
            to.sin_port = htons(9);
            inet_pton(AF_INET, "10.99.0.2", &to.sin_addr);
            char payload[64] = {};
            timespec a{}, b{};
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
            int sent = 0;
            for (int i = 0; i < packets; ++i)
                if (::sendto(sock, payload, sizeof payload, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) > 0) ++sent;
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
            if (sent > packets * 9 / 10) result = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / sent;
        }
        (void)!::write(fds[1], &result, sizeof result);
        _exit(0);
    }
    ::close(fds[1]);
    double result = -1;
    if (::read(fds[0], &result, sizeof result) != sizeof result) result = -1;
    ::close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return result;
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? -1 : v[v.size() / 2];
}

int run(const std::string& cmd) {
    int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
}

// What one job costs the classic way: tc and nft binaries (what a shell prolog does).
void exec_job(const std::string& dev, const std::string& cg, const std::string& key, int minor, bool add) {
    char cls[32];
    std::snprintf(cls, sizeof cls, "1a4e:%x", minor);
    if (add) {
        ::mkdir(cg.c_str(), 0755);
        run("tc class add dev " + dev + " parent 1a4e:1 classid " + cls +
            " htb rate 50mbit ceil 100mbit prio 4 quantum 60000");
        run("tc qdisc add dev " + dev + " parent " + cls + " handle " + std::to_string(minor) + ": pfifo limit 1000");
        run("nft -f - <<'EOF'\nadd element inet lanes prio { \"" + key + "\" : " + std::string(cls) +
            " }\nadd element inet lanes dscp_8 { \"" + key + "\" }\nEOF");
    } else {
        run("nft -f - <<'EOF'\ndelete element inet lanes prio { \"" + key +
            "\" }\ndelete element inet lanes dscp_8 { \"" + key + "\" }\nEOF");
        run("tc class del dev " + dev + " classid " + cls);
        ::rmdir(cg.c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    int iterations = 200, exec_iterations = 30, packets = 100000, reps = 5;
    std::vector<int> levels{1, 100, 500, 1000};
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        if (a == "--iterations") iterations = std::atoi(argv[i + 1]);
        else if (a == "--exec-iterations") exec_iterations = std::atoi(argv[i + 1]);
        else if (a == "--packets") packets = std::atoi(argv[i + 1]);
        else if (a == "--reps") reps = std::atoi(argv[i + 1]);
        else if (a == "--levels") {
            levels.clear();
            for (char* p = std::strtok(argv[i + 1], ","); p; p = std::strtok(nullptr, ","))
                levels.push_back(std::atoi(p));
        }
    }
    if (geteuid() != 0) {
        std::printf("SKIP: bench_shaper needs root (network namespace, tc, nftables, cgroup2)\n");
        return 77;
    }
    if (unshare(CLONE_NEWNET) != 0) {
        std::perror("unshare(CLONE_NEWNET)");
        return 1;
    }
    if (run("ip link add lbench0 type veth peer name lbench1 && ip link set lbench0 up && ip link set lbench1 up && "
            "ip addr add 10.99.0.1/24 dev lbench0 && "
            "ip neigh add 10.99.0.2 lladdr 02:00:00:00:00:02 dev lbench0 nud permanent") != 0)
        return 1;
    auto mount = make_cgroup_tree()->mount();
    if (!mount) {
        std::fprintf(stderr, "%s\n", mount.error().message.c_str());
        return 1;
    }
    const std::string cgroot = mount->mount_point + "/lanes-bench-" + std::to_string(getpid());
    // State on tmpfs, as /run is on a production node: a private mount namespace
    // with its own tmpfs on /run (on a journaled disk an unlink alone costs 1-3 ms).
    std::string state = "/run/lanes-bench";
    if (unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("lanes-bench", "/run", "tmpfs", 0, "mode=0755,size=64m") != 0) {
        std::perror("private tmpfs on /run (state stays on disk)");
        char state_tmpl[] = "/tmp/lanes-bench-state.XXXXXX";
        state = mkdtemp(state_tmpl);
    }
    ::mkdir(cgroot.c_str(), 0755);

    NodeConfig config;
    config.state_dir = state;
    config.cgroup_root = cgroot;
    NicSelector nic;
    nic.device = "lbench0";
    nic.link_speed_bits = 100'000'000'000ull;
    config.nics.push_back(nic);

    // Per packet without any Lanes (no HTB root, no nft table).
    const std::string nojob = cgroot + "/nojob";
    ::mkdir(nojob.c_str(), 0755);
    auto blast = [&](const std::string& dir) {
        std::vector<double> v;
        for (int r = 0; r < reps; ++r) v.push_back(blast_ns_per_packet(dir, packets));
        return median_of(v);
    };
    const double pkt_none = blast(nojob);

    auto t_open = Clock::now();
    auto tc = make_netlink_traffic_control();
    auto marker = make_nftables_packet_marker(*mount, {});
    if (!tc || !marker) return 1;
    auto shaper = NodeShaper::open_with(config, "bench", std::make_unique<TimedTc>(std::move(*tc)),
                                        std::make_unique<TimedMarker>(std::move(*marker)),
                                        std::make_unique<TimedCgroups>(make_cgroup_tree()), {});
    if (!shaper) {
        std::fprintf(stderr, "%s\n", shaper.error().message.c_str());
        return 1;
    }
    double open_ms = ms_since(t_open);
    auto& s = **shaper;
    std::printf(
        "bench_shaper: veth in a private netns, link 100Gbit, leaf qdisc %s, %d iterations per level "
        "in %d interleaved rounds\n",
        s.leaf_qdisc_kind().c_str(), std::max(1, iterations / std::max(1, reps)) * std::max(1, reps), reps);
    std::printf("NodeShaper::open (netlink + nft context + NIC selection): %.3f ms\n\n", open_ms);
    std::printf("%-8s %12s %12s %12s %12s\n", "jobs", "setup med", "setup p99", "teardown med", "teardown p99");

    auto request = [](uint32_t id) {
        JobNetRequest r{id, "bench", {}};
        r.net.rate = Rate{50'000'000, 0};
        r.net.ceil = Rate{0, 10};
        r.net.dscp = 8;
        r.net.rank = 2;
        return r;
    };
    int failures = 0;
    double lib_setup_1 = 0, lib_teardown_1 = 0;
    std::map<int, std::pair<double, double>> per_level;        // jobs -> (setup+teardown median, p99 of setup)
    std::map<int, std::pair<double, double>> per_level_parts;  // jobs -> (setup median, teardown median)
    std::map<int, double> pkt_job;                             // jobs -> ns per packet from inside a job
    uint32_t background = 0;
    // Rounds: every round walks the levels up (1, 100, ... jobs on the NIC, one
    // more coming and going), so each level is measured in every stretch of the
    // run and a busy moment of the machine hits every level alike; the ratios
    // below compare levels measured side by side, not one after the other.
    std::map<int, std::vector<double>> setup_at, teardown_at, pkt_at;
    std::map<int, std::map<std::string, std::pair<double, long>>> spent_at;
    const int per_round = std::max(1, iterations / std::max(1, reps));
    for (int r = 0; r < reps; ++r) {
        for (int level : levels) {
            // level - 1 jobs stay on the NIC while one more comes and goes.
            while (background + 1 < static_cast<uint32_t>(level)) {
                if (!s.apply(request(100000 + background))) ++failures;
                ++background;
            }
            while (background + 1 > static_cast<uint32_t>(level) && background > 0) {
                --background;
                if (!s.remove(100000 + background)) ++failures;
            }
            g_spent.clear();
            for (int k = 0; k < per_round; ++k) {
                uint32_t id = 900000 + k;
                auto t0 = Clock::now();
                if (!s.apply(request(id))) ++failures;
                setup_at[level].push_back(ms_since(t0));
                t0 = Clock::now();
                if (!s.remove(id)) ++failures;
                teardown_at[level].push_back(ms_since(t0));
            }
            for (const auto& [name, v] : g_spent) {
                spent_at[level][name].first += v.first;
                spent_at[level][name].second += v.second;
            }
            // The level-th job is the sender.
            uint32_t sender = 800000;
            auto st = s.apply(request(sender));
            if (!st) ++failures;
            else pkt_at[level].push_back(blast_ns_per_packet(st->cgroup, packets));
            if (!s.remove(sender)) ++failures;
        }
    }
    for (int level : levels) {
        auto a = stats(setup_at[level]), b = stats(teardown_at[level]);
        std::printf("%-8d %9.3f ms %9.3f ms %9.3f ms %9.3f ms\n", level, a.median, a.p99, b.median, b.p99);
        std::vector<double> both;
        for (std::size_t k = 0; k < setup_at[level].size(); ++k)
            both.push_back(setup_at[level][k] + teardown_at[level][k]);
        per_level[level] = {stats(both).median, stats(both).p99};
        per_level_parts[level] = {a.median, b.median};
        pkt_job[level] = median_of(pkt_at[level]);
    }
    lib_setup_1 = per_level_parts[levels.front()].first;
    lib_teardown_1 = per_level_parts[levels.front()].second;
    for (int level : {levels.back(), levels.front()}) {
        std::printf("%sper kernel interface at %d job(s) (mean per call):\n", level == levels.back() ? "\n" : "",
                    level);
        for (const auto& [name, v] : spent_at[level])
            std::printf("  %-34s %8.3f ms\n", name.c_str(), v.first / v.second / 1000);
        if (levels.back() == levels.front()) break;
    }
    // The classifier's own cost, side by side: the same sender (a job's cgroup,
    // all other jobs on the NIC, the same HTB root and the same job class) with
    // the nft table, which classifies and marks it, and without it, the socket
    // then naming the job's class itself (SO_PRIORITY): the difference is
    // nftables alone. Alternating round by round so that the machine's load
    // hits both alike. After each round without, the table is put back from the
    // state files (what `lanesctl reapply` does after `nft flush ruleset`).
    double pkt_htb_only = -1, pkt_rules = -1, reapply_ms = -1;
    std::vector<double> round_ratio;
    {
        auto st = s.apply(request(800000));
        if (!st) ++failures;
        std::vector<double> with, without;
        for (int r = 0; st && r < reps; ++r) {
            with.push_back(blast_ns_per_packet(st->cgroup, packets));
            run("nft delete table inet lanes");
            const uint16_t major = st->root_major ? st->root_major : config.root_handle_major;
            without.push_back(blast_ns_per_packet(st->cgroup, packets, tc_handle(major, st->minor)));
            auto t0 = Clock::now();
            auto re = s.reapply(false);
            reapply_ms = ms_since(t0);
            if (!re) ++failures;
            if (with.back() > 0 && without.back() > 0) round_ratio.push_back(with.back() / without.back());
        }
        pkt_rules = median_of(with);
        pkt_htb_only = median_of(without);
        if (!s.remove(800000)) ++failures;
    }
    for (uint32_t k = 0; k < background; ++k)
        if (!s.remove(100000 + k)) ++failures;

    const int lo = levels.front(), hi = levels.back();
    std::printf("\nsetup+teardown median per level (p99):");
    for (const auto& [lvl, v] : per_level) std::printf("  %d: %.3f ms (%.3f)", lvl, v.first, v.second);
    std::printf(
        "\nper packet (CPU ns, one 64-byte UDP sendto, median of %d x %d): no Lanes %.0f, the job's HTB class without "
        "nft (SO_PRIORITY) "
        "%.0f",
        reps, packets, pkt_none, pkt_htb_only);
    for (const auto& [lvl, v] : pkt_job) std::printf(", %d job(s) %.0f", lvl, v);
    std::printf("\nreapply (nft table + classes of %u jobs from their state files): %.3f ms\n", background + 1,
                reapply_ms);
    std::printf("\nratios %d jobs / %d job: setup x%.2f, teardown x%.2f, setup+teardown x%.2f, per packet x%.2f\n", hi,
                lo, per_level_parts[hi].first / per_level_parts[lo].first,
                per_level_parts[hi].second / per_level_parts[lo].second, per_level[hi].first / per_level[lo].first,
                pkt_job[hi] / pkt_job[lo]);
    std::printf("per packet at %d jobs / its HTB class without nft: x%.2f; / no Lanes at all: x%.2f\n", hi,
                pkt_job[hi] / pkt_htb_only, pkt_job[hi] / pkt_none);
    if (!round_ratio.empty()) {
        auto [lo_r, hi_r] = std::minmax_element(round_ratio.begin(), round_ratio.end());
        std::printf(
            "classifier at %u jobs, same sender and HTB class, nft table / SO_PRIORITY, %zu interleaved rounds: "
            "%.0f / %.0f ns, x%.2f (median of the rounds' ratios x%.2f, min x%.2f, max x%.2f)\n",
            background + 1, round_ratio.size(), pkt_rules, pkt_htb_only, pkt_rules / pkt_htb_only,
            median_of(round_ratio), *lo_r, *hi_r);
    }

    // The classic way, for one job on the same NIC (root and base table exist).
    std::vector<double> esetup, eteardown;
    const std::string cg = cgroot + "/job_x";
    const std::string key = relative_path(cg, kNftCgroupBase);  // nft names cgroupsv2 keys from /sys/fs/cgroup
    for (int k = 0; k < exec_iterations; ++k) {
        auto t0 = Clock::now();
        exec_job("lbench0", cg, key, 0x77, true);
        esetup.push_back(ms_since(t0));
        t0 = Clock::now();
        exec_job("lbench0", cg, key, 0x77, false);
        eteardown.push_back(ms_since(t0));
    }
    auto es = stats(esetup), et = stats(eteardown);
    std::printf("\nfork/exec tc + nft, 1 job: setup %.3f ms, teardown %.3f ms (median of %d)\n", es.median, et.median,
                exec_iterations);
    std::printf("library, 1 job:            setup %.3f ms, teardown %.3f ms\n", lib_setup_1, lib_teardown_1);
    std::printf("exec / library: setup x%.1f, teardown x%.1f, setup+teardown x%.1f\n", es.median / lib_setup_1,
                et.median / lib_teardown_1, (es.median + et.median) / (lib_setup_1 + lib_teardown_1));

    if (!s.remove_all()) ++failures;
    shaper->reset();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(cgroot, ec))
        if (e.is_directory()) ::rmdir(e.path().c_str());
    ::rmdir(nojob.c_str());
    ::rmdir(cgroot.c_str());
    std::filesystem::remove_all(state, ec);
    if (failures) std::printf("FAILURES: %d operations failed\n", failures);
    return failures ? 1 : 0;
}
