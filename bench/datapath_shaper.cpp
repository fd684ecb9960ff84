// SPDX-License-Identifier: GPL-2.0-or-later
// Puts N jobs' HTB classes and nftables elements on one NIC with the real
// NodeShaper (netlink tc, the nftables typed maps, cgroup dirs), holds them
// while bench/datapath_bench.sh sends traffic, and takes them away again.
//
//   datapath_shaper --dev DEV --jobs N --senders K --state DIR --cgroot DIR
//                   [--link-speed BITS]
//
// Run inside the network namespace that holds DEV (nsenter --net, so that
// /sys/fs/cgroup stays visible). It applies jobs 1..N (rate 50 Mbit/s,
// ceil 100 % of the link, DSCP CS1, as a training class), prints
// "sender <cgroup dir>" for the last K of them (the jobs whose processes the
// bench will start the senders in), then "ready", and waits for its stdin to
// close; then it removes every job (NodeShaper::remove_all), the cgroup dirs
// and the state dir, and exits 0 (1 if any operation failed).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "node/cgroup_tree.hpp"
#include "node/node_shaper.hpp"

using namespace lanes;

int main(int argc, char** argv) {
    std::string dev, state, cgroot;
    int jobs = 1000, senders = 1;
    uint64_t link_speed = 100'000'000'000ull;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--dev") dev = argv[i + 1];
        else if (a == "--jobs") jobs = std::atoi(argv[i + 1]);
        else if (a == "--senders") senders = std::atoi(argv[i + 1]);
        else if (a == "--state") state = argv[i + 1];
        else if (a == "--cgroot") cgroot = argv[i + 1];
        else if (a == "--link-speed") link_speed = std::strtoull(argv[i + 1], nullptr, 10);
        else {
            std::fprintf(stderr, "datapath_shaper: error: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (dev.empty() || state.empty() || cgroot.empty() || jobs < 1 || senders < 1 || senders > jobs) {
        std::fprintf(stderr,
                     "usage: datapath_shaper --dev DEV --jobs N --senders K --state DIR --cgroot DIR "
                     "[--link-speed BITS] (1 <= K <= N)\n");
        return 2;
    }
    if (geteuid() != 0) {
        std::printf("SKIP: datapath_shaper needs root (tc, nftables, cgroup2)\n");
        return 77;
    }
    ::mkdir(cgroot.c_str(), 0755);
    NodeConfig config;
    config.state_dir = state;
    config.cgroup_root = cgroot;
    NicSelector nic;
    nic.device = dev;
    nic.link_speed_bits = link_speed;
    config.nics.push_back(nic);
    auto shaper = NodeShaper::open(config, "datapath");
    if (!shaper) {
        std::fprintf(stderr, "datapath_shaper: error: %s\n", shaper.error().message.c_str());
        return 1;
    }
    auto& s = **shaper;
    int failures = 0;
    for (int id = 1; id <= jobs; ++id) {
        JobNetRequest r{static_cast<uint32_t>(id), "training", {}};
        r.net.rate = Rate{50'000'000, 0};
        r.net.ceil = Rate{0, 100};
        r.net.dscp = 8;
        r.net.rank = 2;
        auto st = s.apply(r);
        if (!st) {
            if (++failures == 1)
                std::fprintf(stderr, "datapath_shaper: error: JobId=%d: %s\n", id, st.error().message.c_str());
            continue;
        }
        if (id > jobs - senders) std::printf("sender %s\n", st->cgroup.c_str());
    }
    std::printf("ready %d jobs, %d failed\n", jobs, failures);
    std::fflush(stdout);
    char buf[256];
    while (std::fread(buf, 1, sizeof buf, stdin) > 0) {
    }
    if (!s.remove_all()) ++failures;
    shaper->reset();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(cgroot, ec))
        if (e.is_directory()) ::rmdir(e.path().c_str());
    ::rmdir(cgroot.c_str());
    std::filesystem::remove_all(state, ec);
    return failures ? 1 : 0;
}
