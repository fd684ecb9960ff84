// SPDX-License-Identifier: GPL-2.0-or-later
#include "spank/common.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "config.h"
#include "core/job_env.hpp"
#include "node/node_facts.hpp"

namespace lanes::spank {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A directory root may write into and read trusted files from: root-owned, not a
// symlink, writable by nobody else.
bool is_private_dir(const std::string& dir) {
    struct stat st {};
    return lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

std::string dir_of(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
}

// Nodes have no long-lived process to keep the last good lanes.toml in memory, so
// a copy of the last one that loaded is kept (root-only): a config broken mid-run
// leaves running and new jobs on the last good one.
void remember_good_config(const std::string& path, const std::string& copy) {
    std::string text = read_file(path);
    if (text.empty() || text == read_file(copy)) return;
    std::string dir = dir_of(copy);
    mkdir(dir.c_str(), 0700);
    if (!is_private_dir(dir)) {
        slurm_error("lanes: %s is not a root-only directory; not keeping a last good config there", dir.c_str());
        return;
    }
    if (auto r = write_file_atomically(copy, text, 0600); !r)
        slurm_error("lanes: cannot keep the last good lanes.toml: %s", r.error().message.c_str());
}

}  // namespace

std::optional<SpankArgs> parse_args(int ac, char** av) {
    std::vector<std::string> args(av, av + ac);
    auto parsed = parse_spank_args(args, LANES_DEFAULT_CONFIG);
    if (!parsed) {
        slurm_error("lanes: %s", parsed.error().message.c_str());
        return std::nullopt;
    }
    return *parsed;
}

std::optional<Config> load(const SpankArgs& args) {
    auto config = load_config(args.config_path);
    if (config) {
        remember_good_config(args.config_path, args.last_good_config);
        return std::move(*config);
    }
    slurm_error("lanes: %s", config.error().message.c_str());
    if (!is_private_dir(dir_of(args.last_good_config))) return std::nullopt;
    auto fallback = load_config(args.last_good_config);
    if (!fallback) return std::nullopt;
    slurm_error("lanes: %s is broken; using the last good copy %s", args.config_path.c_str(),
                args.last_good_config.c_str());
    return std::move(*fallback);
}

std::optional<uint32_t> job_id_of(spank_t sp) {
    uint32_t job_id = 0;
    if (spank_get_item(sp, S_JOB_ID, &job_id) == ESPANK_SUCCESS && job_id != 0) return job_id;
    // Prolog/epilog: slurmd sets the environment, not the user.
    if (spank_context() != S_CTX_JOB_SCRIPT) return std::nullopt;
    if (const char* env = std::getenv("SLURM_JOB_ID")) {
        char* end = nullptr;
        unsigned long v = std::strtoul(env, &end, 10);
        if (end && *end == '\0' && v > 0 && v <= 0xffffffffUL) return static_cast<uint32_t>(v);
    }
    return std::nullopt;
}

std::map<std::string, std::string> lanes_environment() {
    std::map<std::string, std::string> vars;
    for (char** e = environ; e && *e; ++e) {
        std::string_view entry(*e);
        if (!is_lanes_entry(entry)) continue;
        auto eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        vars.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
    return vars;
}

Result<std::unique_ptr<NodeShaper>> open_shaper(const Config& config) {
    auto node = node_config_for(config.node, node_name());
    if (!node) return std::unexpected(node.error());
    return NodeShaper::open(*node, node_name(), log_sink);
}

}  // namespace lanes::spank
