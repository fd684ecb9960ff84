// SPDX-License-Identifier: GPL-2.0-or-later
// Drives NodeShaper for the privileged tests in tests/net/*.sh (run inside a test
// network namespace via nsenter --net=, so /sys/fs/cgroup stays visible).
//
//   shaper_tool [options] apply JOB [--class C] [--rate R] [--ceil R] [--dscp D] [--rank N]
//                                   [--ingress-rate R] [--ingress-ceil R] [--times 1]
//        (--times 1: a second line "times wall_ms W lock_wait_ms X lock_held_ms Y
//        lock_held_cpu_ms Z cpu_ms C", W from this process's start, as the prolog's
//        log line, C: the process's CPU)
//   shaper_tool [options] remove JOB
//   shaper_tool [options] run JOB -- PROGRAM ARGS...   (joins the job's cgroup, then execs)
//   shaper_tool [options] counters JOB                 (device bytes packets drops overlimits backlog)
//   shaper_tool [options] list | remove-all | gc ALIVE_JOB... | check | reapply
//   shaper_tool [options] churn N                      (N x apply+remove, leak report)
//   shaper_tool [options] converge [--dry-run]         (one line per repair: object cause job device;
//                                                       then "repairs N jobs N"; problems on stderr)
//   shaper_tool [options] set-ceil JOB DEV RATE [CAUSE] (NodeShaper::set_ceils, as lanes-agent)
// options: --state DIR --nic DEV --speed BITS [--adopt] [--major HEX] [--cgroup-root PATH]
//          [--unclassified-dscp D|keep] [--unclassified-ceil RATE] [--gso-burst US|off]
//          [--parked N] (nodes.parked_classes)
// apply also takes --cgroup REL (the job's dir, relative to the cgroup2 mount)
// --config FILE (lanes.toml): apply/remove also do the class's path (route_table,
// egress_device, vlan) as the prolog/epilog do (policy_routing.hpp);
//   shaper_tool [options] paths-converge [--dry-run] [ALIVE_JOB...]  (one line per repair)
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "node/cgroup_tree.hpp"
#include "node/node_shaper.hpp"
#include "node/policy_routing.hpp"
#include "node/traffic_control.hpp"

using namespace lanes;

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: shaper_tool --state DIR --nic DEV --speed BITS [--adopt] [--major HEX] "
                 "apply|remove|run|counters|list|remove-all|gc|churn ...\n");
    return 2;
}

int count_fds() {
    int n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
        while (readdir(d)) ++n;
        closedir(d);
    }
    return n;
}

int count_entries(const std::string& dir, const char* prefix) {
    int n = 0;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d))
            if (std::strncmp(e->d_name, prefix, std::strlen(prefix)) == 0) ++n;
        closedir(d);
    }
    return n;
}

Result<Rate> rate_arg(const char* text) {
    auto r = parse_rate(text);
    if (!r) return std::unexpected(r.error());
    return *r;
}

}  // namespace

int main(int argc, char** argv) {
    const auto started = std::chrono::steady_clock::now();
    NodeConfig config;
    NicSelector nic;
    std::vector<std::string> args;
    std::string config_file;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        if (a == "--state") {
            config.state_dir = next() ?: "";
        } else if (a == "--nic") {
            nic.device = next() ?: "";
        } else if (a == "--speed") {
            const char* v = next();
            if (!v) return usage();
            nic.link_speed_bits = std::strtoull(v, nullptr, 10);
        } else if (a == "--adopt") {
            config.foreign_qdisc = ForeignQdiscAction::Adopt;
        } else if (a == "--major") {
            const char* v = next();
            if (!v) return usage();
            config.root_handle_major = static_cast<uint16_t>(std::strtoul(v, nullptr, 16));
        } else if (a == "--config") {
            config_file = next() ?: "";
        } else if (a == "--cgroup-root") {
            config.cgroup_root = next() ?: "";
        } else if (a == "--unclassified-dscp") {
            const char* v = next();
            if (!v) return usage();
            if (std::string(v) == "keep") {
                config.unclassified_dscp.reset();
            } else {
                auto d = parse_dscp(v);
                if (!d) return usage();
                config.unclassified_dscp = *d;
            }
        } else if (a == "--gso-burst") {
            const char* v = next();
            if (!v) return usage();
            if (std::string(v) == "off") config.gso_burst_us.reset();
            else config.gso_burst_us = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
        } else if (a == "--parked") {
            const char* v = next();
            if (!v) return usage();
            config.parked_classes = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
        } else if (a == "--unclassified-ceil") {
            const char* v = next();
            if (!v) return usage();
            auto r = parse_rate(v);
            if (!r) return usage();
            config.unclassified_ceil = *r;
        } else {
            for (; i < argc; ++i) args.push_back(argv[i]);
        }
    }
    if (args.empty() || nic.device.empty()) return usage();
    config.nics.push_back(nic);
    const std::string cmd = args[0];

    if (cmd == "run") {
        // The fast path of slurm_spank_task_init_privileged: no netlink, no nft.
        if (args.size() < 4 || args[2] != "--") return usage();
        auto r = NodeShaper::attach_task(config, static_cast<uint32_t>(std::stoul(args[1])), getpid());
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        std::vector<char*> av;
        for (std::size_t k = 3; k < args.size(); ++k) av.push_back(args[k].data());
        av.push_back(nullptr);
        execvp(av[0], av.data());
        std::perror(av[0]);
        return 127;
    }

    bool verbose = std::getenv("LANES_TOOL_VERBOSE") != nullptr;
    auto shaper = NodeShaper::open(config, "testnode", [verbose](LogLevel level, const std::string& line) {
        if (verbose || level == LogLevel::Error) std::fprintf(stderr, "%s\n", line.c_str());
    });
    if (!shaper) {
        std::fprintf(stderr, "%s\n", shaper.error().message.c_str());
        return 1;
    }
    auto& s = **shaper;
    std::optional<Config> lanes_toml;
    if (!config_file.empty()) {
        auto c = load_config(config_file);
        if (!c) {
            std::fprintf(stderr, "%s\n", c.error().message.c_str());
            return 2;
        }
        lanes_toml = *c;
        lanes_toml->node.state_dir = config.state_dir;
        lanes_toml->node.classify_failure_warns = c->node.classify_failure_warns;
        config.classify_failure_warns = c->node.classify_failure_warns;
    }
    auto log = [verbose](LogLevel level, const std::string& line) {
        if (verbose || level == LogLevel::Error) std::fprintf(stderr, "%s\n", line.c_str());
    };
    if (cmd == "paths-converge") {
        bool dry = false;
        std::set<uint32_t> alive;
        bool filter = false;
        for (std::size_t k = 1; k < args.size(); ++k) {
            if (args[k] == "--dry-run") dry = true;
            else alive.insert(static_cast<uint32_t>(std::stoul(args[k]))), filter = true;
        }
        auto router = PathRouter::open(config, log);
        if (!router) {
            std::fprintf(stderr, "%s\n", router.error().message.c_str());
            return 1;
        }
        std::function<bool(uint32_t)> is_alive;
        if (filter) is_alive = [&](uint32_t j) { return alive.count(j) > 0; };
        auto r = (*router)->converge(dry, is_alive);
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        for (const auto& line : *r) std::printf("%s\n", line.c_str());
        std::printf("path repairs %zu\n", r->size());
        return 0;
    }

    if (cmd == "apply") {
        if (args.size() < 2) return usage();
        JobNetRequest req;
        req.job_id = static_cast<uint32_t>(std::stoul(args[1]));
        req.class_name = "test";
        bool times = false;
        for (std::size_t k = 2; k + 1 < args.size(); k += 2) {
            const std::string& key = args[k];
            const char* v = args[k + 1].c_str();
            if (key == "--class") {
                req.class_name = v;
            } else if (key == "--rate" || key == "--ceil" || key == "--ingress-rate" || key == "--ingress-ceil") {
                auto r = rate_arg(v);
                if (!r) {
                    std::fprintf(stderr, "%s\n", r.error().message.c_str());
                    return 2;
                }
                (key == "--rate"           ? req.net.rate
                 : key == "--ceil"         ? req.net.ceil
                 : key == "--ingress-rate" ? req.net.ingress_rate
                                           : req.net.ingress_ceil) = *r;
            } else if (key == "--dscp") {
                auto d = parse_dscp(v);
                if (!d) {
                    std::fprintf(stderr, "%s\n", d.error().message.c_str());
                    return 2;
                }
                req.net.dscp = *d;
            } else if (key == "--rank") {
                req.net.rank = std::atoi(v);
            } else if (key == "--cgroup") {
                req.cgroup = v;
            } else if (key == "--times") {
                times = std::string(v) == "1";
            } else {
                return usage();
            }
        }
        JobPath path;
        if (lanes_toml) {
            // The file's [[nodes.nic]] say where the paths' devices are.
            NodeConfig path_node = config;
            path_node.nics = lanes_toml->node.nics;
            auto p = prepare_job_path(*lanes_toml, path_node, "testnode", req.class_name, log);
            if (!p) {
                std::fprintf(stderr, "%s\n", p.error().message.c_str());
                return 1;
            }
            if (!p->warning.empty()) std::fprintf(stderr, "warning: %s\n", p->warning.c_str());
            path = std::move(*p);
        }
        auto st = s.apply(req);
        if (!st) {
            std::fprintf(stderr, "%s\n", st.error().message.c_str());
            return 1;
        }
        if (auto r = attach_job_path(path, req.job_id, (uint32_t{st->root_major} << 16) | st->minor); !r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            (void)s.remove(req.job_id);
            return 1;
        }
        if (path.router) std::printf("path %s\n", path.path.describe().c_str());
        std::printf("job %u minor %x cgroup %s leaf %s\n", st->job_id, st->minor, st->cgroup.c_str(),
                    s.leaf_qdisc_kind().c_str());
        if (times) {
            const auto lock = s.last_lock_times();
            const std::chrono::duration<double, std::milli> wall = std::chrono::steady_clock::now() - started;
            timespec cpu{};
            ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
            std::printf("times wall_ms %.3f lock_wait_ms %.3f lock_held_ms %.3f lock_held_cpu_ms %.3f cpu_ms %.3f\n",
                        wall.count(), lock.wait_ms, lock.held_ms, lock.held_cpu_ms,
                        static_cast<double>(cpu.tv_sec) * 1e3 + static_cast<double>(cpu.tv_nsec) / 1e6);
        }
        return 0;
    }
    if (cmd == "remove") {
        if (args.size() != 2) return usage();
        if (auto d = detach_job_path(config, static_cast<uint32_t>(std::stoul(args[1])), log); !d) {
            std::fprintf(stderr, "%s\n", d.error().message.c_str());
            return 1;
        }
        auto r = s.remove(static_cast<uint32_t>(std::stoul(args[1])));
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        return 0;
    }
    if (cmd == "counters") {
        if (args.size() != 2) return usage();
        auto c = s.counters(static_cast<uint32_t>(std::stoul(args[1])));
        if (!c) {
            std::fprintf(stderr, "%s\n", c.error().message.c_str());
            return 1;
        }
        for (const auto& [dev, k] : *c)
            std::printf("%s %llu %llu %llu %llu %llu\n", dev.c_str(), (unsigned long long)k.bytes,
                        (unsigned long long)k.packets, (unsigned long long)k.drops, (unsigned long long)k.overlimits,
                        (unsigned long long)k.backlog);
        return 0;
    }
    if (cmd == "list") {
        for (const auto& st : s.list())
            std::printf("%u %s %x %s\n", st.job_id, st.class_name.c_str(), st.minor, st.cgroup.c_str());
        return 0;
    }
    if (cmd == "reapply" || cmd == "check") {
        auto r = cmd == "check" ? s.check() : s.reapply(true);
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        std::printf("%s %zu %s\n", r->needed ? "missing" : "ok", r->jobs, r->what.c_str());
        return 0;
    }
    if (cmd == "converge") {
        const bool dry = args.size() > 1 && args[1] == "--dry-run";
        auto r = s.converge(dry);
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        for (const auto& rep : r->repairs)
            std::printf("%s %s %u %s\n", rep.object.c_str(), rep.cause.c_str(), rep.job_id,
                        rep.device.empty() ? "-" : rep.device.c_str());
        for (const auto& p : r->problems) std::fprintf(stderr, "problem: %s\n", p.c_str());
        std::printf("repairs %zu jobs %zu\n", r->repairs.size(), r->jobs);
        return 0;
    }
    if (cmd == "set-ceil") {
        if (args.size() < 4) return usage();
        auto rate = rate_arg(args[3].c_str());
        if (!rate) {
            std::fprintf(stderr, "%s\n", rate.error().message.c_str());
            return 2;
        }
        CeilChange change{static_cast<uint32_t>(std::stoul(args[1])), args[2], rate->bits_per_second};
        auto r = s.set_ceils({change}, args.size() > 4 ? args[4] : "test");
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        for (const auto& d : *r) {
            if (!d.error.empty()) {
                std::fprintf(stderr, "%s\n", d.error.c_str());
                return 1;
            }
            std::printf("job %u %s ceil %llu -> %llu\n", d.job_id, d.device.c_str(), (unsigned long long)d.from_bits,
                        (unsigned long long)d.to_bits);
        }
        return 0;
    }
    if (cmd == "remove-all") {
        auto r = s.remove_all();
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        return 0;
    }
    if (cmd == "gc") {
        std::set<uint32_t> alive;
        for (std::size_t k = 1; k < args.size(); ++k) alive.insert(static_cast<uint32_t>(std::stoul(args[k])));
        auto r = s.reconcile([&](const JobState& st) { return alive.count(st.job_id) > 0; });
        if (!r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        for (uint32_t id : *r) std::printf("removed %u\n", id);
        return 0;
    }
    if (cmd == "churn") {
        // N rounds of apply + remove on distinct job ids; then the leak report the
        // test checks: fds of this process, state files, claims, classes, cgroup dirs.
        if (args.size() != 2) return usage();
        int rounds = std::atoi(args[1].c_str());
        auto tc = make_netlink_traffic_control();
        if (!tc) return 1;
        int ifindex = s.nics().front().ifindex;
        // Warm up once so lazily opened handles (nft base, caches) exist before counting.
        JobNetRequest warm{4000000000u, "churn", {}};
        warm.net.rate = Rate{10'000'000, 0};
        warm.net.dscp = 10;
        if (auto r = s.apply(warm); !r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        if (auto r = s.remove(warm.job_id); !r) {
            std::fprintf(stderr, "%s\n", r.error().message.c_str());
            return 1;
        }
        int fds_before = count_fds();
        auto classes_before = (*tc)->classes(ifindex, config.root_handle_major);
        auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < rounds; ++k) {
            JobNetRequest req{static_cast<uint32_t>(1000000 + k), "churn", {}};
            req.net.rate = Rate{static_cast<uint64_t>(5'000'000 + k * 1000), 0};
            req.net.ceil = Rate{0, 50};
            req.net.dscp = static_cast<uint8_t>(k % 64);
            auto st = s.apply(req);
            if (!st) {
                std::fprintf(stderr, "round %d: %s\n", k, st.error().message.c_str());
                return 1;
            }
            auto r = s.remove(req.job_id);
            if (!r) {
                std::fprintf(stderr, "round %d: %s\n", k, r.error().message.c_str());
                return 1;
            }
        }
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        auto classes_after = (*tc)->classes(ifindex, config.root_handle_major);
        auto mount = make_cgroup_tree()->mount();
        std::string own = config.cgroup_root != "auto" ? config.cgroup_root
                          : mount                      ? mount->mount_point + "/lanes"
                                                       : "";
        std::printf("rounds %d seconds %.3f\n", rounds, secs);
        std::printf("fds %d %d\n", fds_before, count_fds());
        std::printf("classes %zu %zu\n", classes_before ? classes_before->size() : 0,
                    classes_after ? classes_after->size() : 0);
        std::printf("state_files %d\n", count_entries(config.state_dir, "job_"));
        std::printf("minor_claims %d\n", count_entries(config.state_dir, "minor_"));
        std::printf("cgroup_dirs %d\n", own.empty() ? -1 : count_entries(own, "job_"));
        return 0;
    }
    return usage();
}
