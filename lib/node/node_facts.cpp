// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/node_facts.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "node/cgroup_tree.hpp"

namespace lanes {
namespace {

std::string slurp(const std::string& path, bool* ok = nullptr) {
    std::ifstream in(path, std::ios::binary);
    if (ok) *ok = static_cast<bool>(in);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    return text.str();
}

bool is_dir(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Stepd scopes below `dir`, down to `depth` more levels. Slurm puts the scope in
// system.slice by default; other slices (or a container's root) move it. Scopes
// and services hold no other scopes: not entered.
void collect_scopes(const std::string& dir, int depth, std::vector<std::string>& out) {
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d) return;
    std::vector<std::string> subs;
    while (dirent* e = ::readdir(d.get())) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
        std::string_view name = e->d_name;
        if (is_slurmstepd_scope(name)) out.push_back(dir + "/" + e->d_name);
        else if (depth > 0 && !name.ends_with(".scope") && !name.ends_with(".service"))
            subs.push_back(dir + "/" + e->d_name);
    }
    for (const auto& sub : subs) collect_scopes(sub, depth - 1, out);
}

std::map<uint32_t, long> stepd_jobs_in_own_netns() {
    std::map<uint32_t, long> jobs;
    struct stat self {};
    const bool know_self = ::stat("/proc/self/ns/net", &self) == 0;
    std::unique_ptr<DIR, int (*)(DIR*)> proc(::opendir("/proc"), ::closedir);
    if (!proc) return jobs;
    while (dirent* e = ::readdir(proc.get())) {
        if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
        const std::string dir = std::string("/proc/") + e->d_name;
        auto id = stepd_job_id(slurp(dir + "/cmdline"));
        if (!id) continue;
        // Any user can set a process title; only root runs slurmstepd.
        struct stat owner {};
        if (::stat(dir.c_str(), &owner) != 0 || owner.st_uid != 0) continue;
        // Unknown namespace (process gone, no permission): count it as ours.
        struct stat ns {};
        if (know_self && ::stat((dir + "/ns/net").c_str(), &ns) == 0 &&
            (ns.st_ino != self.st_ino || ns.st_dev != self.st_dev))
            continue;
        jobs.emplace(*id, std::strtol(e->d_name, nullptr, 10));
    }
    return jobs;
}

}  // namespace

std::string short_host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
    std::string name(buf);
    if (auto dot = name.find('.'); dot != std::string::npos) name.resize(dot);
    return name;
}

std::string node_name() {
    if (const char* env = std::getenv("SLURMD_NODENAME"); env && *env) return env;
    return short_host_name();
}

Result<void> write_file_atomically(const std::string& path, std::string_view text, mode_t mode, FileSync sync) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) return fail(tmp + ": cannot create: " + std::strerror(errno));
    auto give_up = [&](const std::string& what) -> Result<void> {
        std::string why = std::strerror(errno);
        ::close(fd);
        ::unlink(tmp.c_str());
        return fail(tmp + ": " + what + ": " + why);
    };
    std::size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return give_up("cannot write");
        done += static_cast<std::size_t>(n);
    }
    // The umask must not decide who may read it.
    if (::fchmod(fd, mode) != 0) return give_up("chmod");
    if (sync == FileSync::ToDisk && ::fsync(fd) != 0) return give_up("fsync");
    if (::close(fd) != 0) {
        std::string why = std::strerror(errno);
        ::unlink(tmp.c_str());
        return fail(tmp + ": " + why);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string why = std::strerror(errno);
        ::unlink(tmp.c_str());
        return fail(path + ": cannot rename " + tmp + " to it: " + why);
    }
    return {};
}

std::string current_boot_id() {
    std::string id;
    if (std::ifstream in("/proc/sys/kernel/random/boot_id"); in) std::getline(in, id);
    return id;
}

bool is_slurmstepd_scope(std::string_view name) {
    constexpr std::string_view scope = "slurmstepd.scope";
    if (name == scope) return true;
    return name.size() > scope.size() + 1 && name.ends_with(scope) && name[name.size() - scope.size() - 1] == '_';
}

std::optional<std::string> slurm_job_dir_of(std::string_view path, std::optional<uint32_t> job_id) {
    bool in_scope = false;
    std::size_t pos = 0;
    while (pos < path.size()) {
        std::size_t slash = path.find('/', pos);
        std::size_t end = slash == std::string_view::npos ? path.size() : slash;
        std::string_view part = path.substr(pos, end - pos);
        if (in_scope && part.starts_with("job_")) {
            uint32_t id = 0;
            auto [p, ec] = std::from_chars(part.data() + 4, part.data() + part.size(), id);
            if (ec == std::errc() && p == part.data() + part.size() && part.size() > 4 && (!job_id || id == *job_id))
                return std::string(path.substr(0, end));
            return std::nullopt;
        }
        in_scope = is_slurmstepd_scope(part);
        pos = end + 1;
    }
    return std::nullopt;
}

std::vector<std::string> find_slurmstepd_scopes(const std::string& mount_point) {
    std::vector<std::string> scopes;
    collect_scopes(mount_point == "/" ? "" : mount_point, 3, scopes);
    return scopes;
}

std::optional<std::string> find_slurm_job_cgroup(const std::string& mount_point, uint32_t job_id) {
    for (const auto& scope : find_slurmstepd_scopes(mount_point)) {
        std::string dir = scope + "/job_" + std::to_string(job_id);
        if (is_dir(dir)) return dir;
    }
    return std::nullopt;
}

bool slurm_manages_cgroup_v2(const std::string& mount_point) { return !find_slurmstepd_scopes(mount_point).empty(); }

std::optional<uint32_t> stepd_job_id(std::string_view cmdline) {
    // The title is argv[0]; what follows a NUL is other arguments.
    cmdline = cmdline.substr(0, cmdline.find('\0'));
    constexpr std::string_view prefix = "slurmstepd: [";
    if (!cmdline.starts_with(prefix)) return std::nullopt;
    cmdline.remove_prefix(prefix.size());
    uint32_t id = 0;
    auto [end, ec] = std::from_chars(cmdline.data(), cmdline.data() + cmdline.size(), id);
    if (ec != std::errc() || end == cmdline.data() || end == cmdline.data() + cmdline.size()) return std::nullopt;
    if (*end != '.' && *end != ']') return std::nullopt;
    return id;
}

namespace {

constexpr std::pair<ControllerAnswer::Kind, std::string_view> kAnswerKinds[] = {
    {ControllerAnswer::Kind::Active, "active"},
    {ControllerAnswer::Kind::Completing, "completing"},
    {ControllerAnswer::Kind::Ended, "ended"},
    {ControllerAnswer::Kind::Unknown, "unknown"},
    {ControllerAnswer::Kind::Unreachable, "unreachable"},
};

// Answers travel one per line: no line breaks inside a detail.
std::string one_line(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c == '\n' || c == '\r') c = ' ';
    return out;
}

}  // namespace

std::string_view controller_answer_kind_name(ControllerAnswer::Kind kind) {
    for (const auto& [k, name] : kAnswerKinds)
        if (k == kind) return name;
    return "unreachable";
}

std::string format_controller_answer(uint32_t job_id, const ControllerAnswer& answer) {
    return std::to_string(job_id) + " " + std::string(controller_answer_kind_name(answer.kind)) + " " +
           one_line(answer.detail) + "\n";
}

std::map<uint32_t, ControllerAnswer> parse_controller_answers(std::string_view text,
                                                              std::vector<std::string>* other_lines) {
    std::map<uint32_t, ControllerAnswer> answers;
    while (!text.empty()) {
        std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        if (line.empty()) continue;
        auto reject = [&] {
            if (other_lines) other_lines->emplace_back(line);
        };
        uint32_t id = 0;
        auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), id);
        if (ec != std::errc() || p == line.data() || p == line.data() + line.size() || *p != ' ') {
            reject();
            continue;
        }
        std::string_view rest = line.substr(static_cast<std::size_t>(p - line.data()) + 1);
        std::size_t space = rest.find(' ');
        std::string_view kind = rest.substr(0, space);
        std::string_view detail = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
        bool known = false;
        for (const auto& [k, name] : kAnswerKinds) {
            if (name != kind) continue;
            answers[id] = ControllerAnswer{k, std::string(detail)};
            known = true;
        }
        if (!known) reject();
    }
    return answers;
}

JobLiveness decide_liveness(const LocalJobEvidence& local, const std::optional<ControllerAnswer>& answer) {
    using Kind = ControllerAnswer::Kind;
    if (local.earlier_boot) return {false, "shaped in an earlier boot (no epilog will come)"};
    if (!local.alive.empty()) return {true, local.alive};
    // No process here proves nothing: an allocation without a step has none.
    if (!answer) return {true, "no process on this node, but alive until its epilog (slurmctld not asked)"};
    const std::string said = answer->detail.empty() ? "" : " (" + answer->detail + ")";
    switch (answer->kind) {
        case Kind::Active: return {true, "slurmctld says it is active" + said};
        case Kind::Completing:
            return {true, "slurmctld says it is completing" + said + ": its epilog is still to come"};
        case Kind::Ended: return {false, "slurmctld says it ended" + said + " and no step of it runs here"};
        case Kind::Unknown: return {false, "slurmctld no longer knows it" + said + " and no step of it runs here"};
        case Kind::Unreachable: break;
    }
    return {true,
            "no process on this node and slurmctld cannot be asked" + said + ": kept until slurmctld can say it ended"};
}

LivenessProbe::LivenessProbe(ControllerProbe ask_controller)
    : ask_controller_(std::move(ask_controller)), stepds_(stepd_jobs_in_own_netns()), boot_id_(current_boot_id()) {
    if (auto m = make_cgroup_tree()->mount()) cgroup2_mount_ = m->mount_point;
}

LocalJobEvidence LivenessProbe::local(const JobState& st) const {
    LocalJobEvidence seen;
    if (!st.boot_id.empty() && !boot_id_.empty() && st.boot_id != boot_id_) {
        seen.earlier_boot = true;
        return seen;
    }
    if (auto it = stepds_.find(st.job_id); it != stepds_.end()) {
        seen.alive = "slurmstepd pid " + std::to_string(it->second);
        return seen;
    }
    if (!cgroup2_mount_.empty())
        if (auto dir = find_slurm_job_cgroup(cgroup2_mount_, st.job_id)) {
            seen.alive = "Slurm's cgroup " + *dir;
            return seen;
        }
    if (st.cgroup_owned && !st.cgroup.empty() && is_dir(st.cgroup)) {
        bool ok = false;
        std::string procs = slurp(st.cgroup + "/cgroup.procs", &ok);
        if (!ok) seen.alive = "cgroup " + st.cgroup + " exists but cgroup.procs is unreadable";
        else if (procs.find_first_not_of(" \n") != std::string::npos)
            seen.alive = "cgroup " + st.cgroup + " has processes (pid " + procs.substr(0, procs.find('\n')) + ")";
    }
    return seen;
}

JobLiveness LivenessProbe::check(const JobState& st) const { return check_all({st}).at(st.job_id); }

std::map<uint32_t, JobLiveness> LivenessProbe::check_all(const std::vector<JobState>& states) const {
    std::map<uint32_t, LocalJobEvidence> seen;
    std::vector<uint32_t> undecided;
    for (const auto& st : states) {
        auto [it, fresh] = seen.emplace(st.job_id, local(st));
        if (fresh && !it->second.earlier_boot && it->second.alive.empty()) undecided.push_back(st.job_id);
    }
    std::map<uint32_t, ControllerAnswer> answers;
    if (ask_controller_ && !undecided.empty()) answers = ask_controller_(undecided);
    std::map<uint32_t, JobLiveness> out;
    for (const auto& [id, evidence] : seen) {
        std::optional<ControllerAnswer> answer;
        if (ask_controller_) {
            auto it = answers.find(id);
            answer =
                it != answers.end() ? it->second : ControllerAnswer{ControllerAnswer::Kind::Unreachable, "no answer"};
        }
        out.emplace(id, decide_liveness(evidence, answer));
    }
    return out;
}

}  // namespace lanes
