// SPDX-License-Identifier: GPL-2.0-or-later
// Test helper for tests/lanesctl/status_gc_test.sh: applies shaping for one job the
// way spank_lanes' prolog does (NodeShaper::apply with the class's network settings
// from lanes.toml), so lanesctl status/gc find real state, real tc classes and nft
// rules. Prints the job's cgroup directory.
//
//   plant_state CONFIG NODE JOBID CLASS [earlier-boot]
// earlier-boot: the state then says it was written in another boot (a job whose
// node rebooted: no epilog will come).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/lanes_toml.hpp"
#include "node/job_state_store.hpp"
#include "node/node_shaper.hpp"

int main(int argc, char** argv) {
    const bool earlier_boot = argc == 6 && std::string(argv[5]) == "earlier-boot";
    if (argc != 5 && !earlier_boot) {
        std::fprintf(stderr, "usage: plant_state CONFIG NODE JOBID CLASS [earlier-boot]\n");
        return 2;
    }
    auto config = lanes::load_config(argv[1]);
    if (!config) {
        std::fprintf(stderr, "plant_state: %s\n", config.error().message.c_str());
        return 1;
    }
    const lanes::ClassConfig* cls = config->find_class(argv[4]);
    if (!cls) {
        std::fprintf(stderr, "plant_state: no class '%s' in %s\n", argv[4], argv[1]);
        return 1;
    }
    lanes::JobNetRequest request;
    request.job_id = static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10));
    request.class_name = cls->name;
    request.net.dscp = cls->dscp;
    request.net.rate = cls->rate;
    request.net.ceil = cls->ceil;
    request.net.rank = cls->rank;
    lanes::LogSink log = [](lanes::LogLevel level, const std::string& line) {
        if (level == lanes::LogLevel::Error) std::fprintf(stderr, "plant_state: %s\n", line.c_str());
    };
    auto shaper = lanes::NodeShaper::open(config->node, argv[2], log);
    if (!shaper) {
        std::fprintf(stderr, "plant_state: %s\n", shaper.error().message.c_str());
        return 1;
    }
    auto state = (*shaper)->apply(request);
    if (!state) {
        std::fprintf(stderr, "plant_state: %s\n", state.error().message.c_str());
        return 1;
    }
    if (earlier_boot) {
        lanes::JobState older = *state;
        older.boot_id = "00000000-0000-0000-0000-000000000000";
        lanes::JobStateStore store(config->node.state_dir);
        if (auto saved = store.save(older); !saved) {
            std::fprintf(stderr, "plant_state: %s\n", saved.error().message.c_str());
            return 1;
        }
    }
    std::printf("%s\n", state->cgroup.c_str());
    return 0;
}
