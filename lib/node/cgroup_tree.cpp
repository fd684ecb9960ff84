// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/cgroup_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "core/text.hpp"
#include "node/node_facts.hpp"

namespace lanes {
namespace {

std::vector<std::string> components(std::string_view path) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < path.size()) {
        std::size_t slash = path.find('/', pos);
        std::string_view part =
            path.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
        if (!part.empty() && part != ".") out.emplace_back(part);
        if (slash == std::string_view::npos) break;
        pos = slash + 1;
    }
    return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            int v = 0;
            bool ok = true;
            for (int k = 1; k <= 3; ++k) {
                char c = s[i + k];
                if (c < '0' || c > '7') ok = false;
                v = v * 8 + (c - '0');
            }
            if (ok) {
                out += static_cast<char>(v);
                i += 3;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

// "dir" is inside "mount_point" (lexically, no "..").
bool inside(const std::string& dir, const std::string& mount_point) {
    if (dir.find("/../") != std::string::npos || dir.ends_with("/..")) return false;
    if (mount_point == "/") return dir.starts_with("/");
    return dir == mount_point || dir.starts_with(mount_point + "/");
}

int level_of(const Cgroup2Mount& mount, const std::string& dir) {
    return static_cast<int>(components(mount.root).size() + components(relative_path(dir, mount.mount_point)).size());
}

std::string trim_slashes(std::string s) {
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

Result<std::string> read_small(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(path + ": " + errno_text(errno));
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    int err = errno;
    ::close(fd);
    if (n < 0) return fail(path + ": " + errno_text(err));
    return text;
}

Result<void> write_pid(const std::string& procs, pid_t pid, bool missing_ok) {
    int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return fail(procs + ": " + errno_text(errno));
    std::string text = std::to_string(pid);
    ssize_t n = ::write(fd, text.data(), text.size());
    int err = errno;
    ::close(fd);
    if (n < 0 && !(missing_ok && err == ESRCH)) return fail("write " + text + " to " + procs + ": " + errno_text(err));
    return {};
}

// Write a short control value ("1" to cgroup.kill); false if the file is absent
// or the kernel refuses.
bool write_text(const std::string& path, std::string_view text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
}

class RealCgroupTree final : public CgroupTree {
public:
    explicit RealCgroupTree(std::string mountinfo_path) : mountinfo_path_(std::move(mountinfo_path)) {}

    Result<Cgroup2Mount> mount() override {
        if (!mount_) {
            std::ifstream in(mountinfo_path_);
            if (!in) return fail(mountinfo_path_ + ": cannot read");
            std::stringstream ss;
            ss << in.rdbuf();
            auto m = parse_mountinfo_cgroup2(ss.str());
            if (!m) return std::unexpected(m.error());
            mount_ = *m;
        }
        return *mount_;
    }

    bool exists(const std::string& dir) override {
        struct stat st {};
        return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }

    Result<uint64_t> ensure_dir(const std::string& dir) override {
        if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
            if (errno != ENOENT) return fail("cgroup mkdir " + dir + ": " + errno_text(errno));
            // Parents missing: make them, then this one.
            std::string path;
            for (const auto& c : components(dir)) {
                path += "/" + c;
                if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
                    return fail("cgroup mkdir " + path + ": " + errno_text(errno));
            }
        }
        return dir_id(dir);
    }

    Result<uint64_t> dir_id(const std::string& dir) override {
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0) return fail("cgroup " + dir + ": " + errno_text(errno));
        return static_cast<uint64_t>(st.st_ino);
    }

    Result<void> attach(const std::string& dir, pid_t pid) override {
        auto r = write_pid(dir + "/cgroup.procs", pid, false);
        if (!r) return fail("attach pid " + std::to_string(pid) + ": " + r.error().message);
        return {};
    }

    Result<std::vector<pid_t>> pids(const std::string& dir) override {
        auto text = read_small(dir + "/cgroup.procs");
        if (!text) return fail(text.error().message);
        std::vector<pid_t> out;
        std::istringstream in(*text);
        pid_t p;
        while (in >> p) out.push_back(p);
        return out;
    }

    Result<void> remove_dir(const std::string& dir, const std::string& parent) override {
        if (!exists(dir)) return {};
        // Children first (a job may have made sub-cgroups).
        if (DIR* d = ::opendir(dir.c_str())) {
            std::vector<std::string> subs;
            while (dirent* e = ::readdir(d))
                if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
                    subs.push_back(dir + "/" + e->d_name);
            ::closedir(d);
            for (const auto& sub : subs) {
                auto r = remove_dir(sub, parent);
                if (!r) return r;
            }
        }
        // The job is over: whatever still runs in its cgroup is a straggler. Kill it
        // (cgroup.kill, Linux 5.14+) as Slurm would; only where the kernel lacks
        // cgroup.kill are stragglers moved to the parent so the dir can go.
        bool killed = write_text(dir + "/cgroup.kill", "1");
        for (int attempt = 0;; ++attempt) {
            auto left = pids(dir);
            if (left && !killed) {
                for (pid_t p : *left) {
                    auto r = write_pid(parent + "/cgroup.procs", p, true);
                    if (!r) return fail("cgroup " + dir + ": moving leftover pid: " + r.error().message);
                }
            }
            if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return {};
            int err = errno;
            if (err != EBUSY || attempt >= 250) return fail("cgroup rmdir " + dir + ": " + errno_text(err));
            // Exiting tasks leave the cgroup asynchronously.
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }

    std::vector<std::string> slurm_stepd_scopes() override {
        auto m = mount();
        if (!m) return {};
        return find_slurmstepd_scopes(m->mount_point);
    }

private:
    std::string mountinfo_path_;
    std::optional<Cgroup2Mount> mount_;
};

}  // namespace

Result<Cgroup2Mount> parse_mountinfo_cgroup2(std::string_view mountinfo) {
    while (!mountinfo.empty()) {
        std::size_t nl = mountinfo.find('\n');
        std::string_view line = mountinfo.substr(0, nl);
        mountinfo = nl == std::string_view::npos ? std::string_view{} : mountinfo.substr(nl + 1);
        std::size_t sep = line.find(" - ");
        if (sep == std::string_view::npos) continue;
        std::string_view after = line.substr(sep + 3);
        if (!after.starts_with("cgroup2 ")) continue;
        auto fields = [](std::string_view s) {
            std::vector<std::string_view> f;
            std::size_t pos = 0;
            while (pos < s.size()) {
                std::size_t sp = s.find(' ', pos);
                f.push_back(s.substr(pos, sp == std::string_view::npos ? std::string_view::npos : sp - pos));
                if (sp == std::string_view::npos) break;
                pos = sp + 1;
            }
            return f;
        }(line.substr(0, sep));
        if (fields.size() < 5) continue;
        return Cgroup2Mount{unescape(fields[4]), unescape(fields[3])};
    }
    return fail(
        "no cgroup2 mount in /proc/self/mountinfo (Lanes needs the unified hierarchy, "
        "hybrid is fine)");
}

std::string relative_path(const std::string& path, const std::string& base) {
    auto p = components(path), b = components(base);
    std::size_t common = 0;
    while (common < p.size() && common < b.size() && p[common] == b[common]) ++common;
    std::string out;
    for (std::size_t i = common; i < b.size(); ++i) out += out.empty() ? ".." : "/..";
    for (std::size_t i = common; i < p.size(); ++i) out += (out.empty() ? "" : "/") + p[i];
    return out;
}

int cgroup_dir_level(const Cgroup2Mount& mount, const std::string& dir) { return level_of(mount, dir); }

Result<CgroupPlacement> place_job_cgroup(const std::string& cgroup_root, const Cgroup2Mount& mount, uint32_t job_id,
                                         const std::optional<std::string>& slurm_dir) {
    CgroupPlacement p;
    std::string mp = trim_slashes(mount.mount_point);
    std::string job = "job_" + std::to_string(job_id);
    if (cgroup_root == "auto" || cgroup_root.empty()) {
        if (mp == kNftCgroupBase && slurm_dir && inside(*slurm_dir, mp)) {
            p.dir = trim_slashes(*slurm_dir);
            p.owned = false;
        } else {
            p.dir = (mp == "/" ? "" : mp) + "/lanes/" + job;
            p.owned = true;
        }
    } else {
        std::string base = trim_slashes(cgroup_root);
        if (base.empty() || base[0] != '/')
            return fail("node.cgroup_root \"" + cgroup_root + "\": must be \"auto\" or an absolute path");
        if (!inside(base, mp) || base == mp)
            return fail("node.cgroup_root \"" + cgroup_root + "\": not below the cgroup2 mount " + mp);
        p.dir = base + "/" + job;
        p.owned = true;
    }
    p.parent = p.dir.substr(0, p.dir.find_last_of('/'));
    if (p.parent.empty()) p.parent = "/";
    p.key = relative_path(p.dir, mp);
    p.level = level_of(mount, p.dir);
    return p;
}

Result<std::vector<int>> cgroup_levels(const std::string& cgroup_root, const Cgroup2Mount& mount,
                                       const std::vector<int>& slurm_job_levels) {
    std::vector<int> levels;
    auto own = place_job_cgroup(cgroup_root, mount, 0, std::nullopt);
    if (!own) return std::unexpected(own.error());
    levels.push_back(own->level);
    if ((cgroup_root == "auto" || cgroup_root.empty()) && trim_slashes(mount.mount_point) == kNftCgroupBase)
        for (int level : slurm_job_levels)
            if (std::find(levels.begin(), levels.end(), level) == levels.end()) levels.push_back(level);
    return levels;
}

std::unique_ptr<CgroupTree> make_cgroup_tree(std::string mountinfo_path) {
    return std::make_unique<RealCgroupTree>(std::move(mountinfo_path));
}

}  // namespace lanes
