// SPDX-License-Identifier: GPL-2.0-or-later
// cgroup2 directories for jobs: where they are (pure path logic) and the few file
// operations on them (mkdir, cgroup.procs, rmdir) behind a small interface.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace lanes {

// Where nft resolves cgroupsv2 map keys.
inline constexpr const char* kNftCgroupBase = "/sys/fs/cgroup";

// The cgroup2 mount of this mount namespace.
struct Cgroup2Mount {
    std::string mount_point;  // "/sys/fs/cgroup/unified" (hybrid) or "/sys/fs/cgroup"
    std::string root;         // the hierarchy path mounted there, normally "/"
};

// The first cgroup2 line of a /proc/self/mountinfo text.
Result<Cgroup2Mount> parse_mountinfo_cgroup2(std::string_view mountinfo);

// A job's dir and how nft names it.
struct CgroupPlacement {
    std::string dir;     // absolute
    std::string parent;  // absolute; leftover pids go here at remove
    std::string key;     // relative to the cgroup2 mount ("lanes/job_7"; the marker's key)
    int level = 0;       // depth in the cgroup2 hierarchy (nft `socket cgroupv2 level`)
    bool owned = false;  // Lanes' own dir (created and removed by Lanes)
};

// cgroup_root "auto": Slurm's job dir `slurm_dir` (absolute, found with
// node_facts.hpp find_slurm_job_cgroup) when the mount is /sys/fs/cgroup and it
// is given, else <mount>/lanes/job_<id>. Any other value: an absolute directory
// inside the cgroup2 mount; jobs go to <value>/job_<id>.
Result<CgroupPlacement> place_job_cgroup(const std::string& cgroup_root, const Cgroup2Mount& mount, uint32_t job_id,
                                         const std::optional<std::string>& slurm_dir);

// The levels nft must match for `cgroup_root`: Lanes' own dirs, plus
// `slurm_job_levels` (depths of Slurm's job_<id> dirs) when "auto" on a node
// whose cgroup2 mount is /sys/fs/cgroup.
Result<std::vector<int>> cgroup_levels(const std::string& cgroup_root, const Cgroup2Mount& mount,
                                       const std::vector<int>& slurm_job_levels = {});

// The depth of an absolute dir in the cgroup2 hierarchy (nft `socket cgroupv2 level`).
int cgroup_dir_level(const Cgroup2Mount& mount, const std::string& dir);

// Lexical path relative to `base` ("/sys/fs/cgroup/unified/x" from "/sys/fs/cgroup"
// -> "unified/x"; outside it, with ".." components).
std::string relative_path(const std::string& path, const std::string& base);

class CgroupTree {
public:
    virtual ~CgroupTree() = default;
    virtual Result<Cgroup2Mount> mount() = 0;
    virtual bool exists(const std::string& dir) = 0;
    // mkdir -p; returns the dir's cgroup id (its inode number).
    virtual Result<uint64_t> ensure_dir(const std::string& dir) = 0;
    virtual Result<uint64_t> dir_id(const std::string& dir) = 0;
    virtual Result<void> attach(const std::string& dir, pid_t pid) = 0;
    // Move any pids left to `parent`, then rmdir. Absent = success.
    virtual Result<void> remove_dir(const std::string& dir, const std::string& parent) = 0;
    // Pids in the dir (tests, lanesctl).
    virtual Result<std::vector<pid_t>> pids(const std::string& dir) = 0;
    // Slurm's stepd scopes (absolute) under the mount (node_facts.hpp rules).
    virtual std::vector<std::string> slurm_stepd_scopes() = 0;
};

// The real one (files under the cgroup2 mount). `mountinfo` is read once.
std::unique_ptr<CgroupTree> make_cgroup_tree(std::string mountinfo_path = "/proc/self/mountinfo");

}  // namespace lanes
