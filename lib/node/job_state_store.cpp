// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/job_state_store.hpp"

#include "core/job_env.hpp"  // encode_rate: the one machine form of a rate
#include "core/text.hpp"
#include "node/node_facts.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>

namespace lanes {
namespace {

constexpr const char* kHeader = "lanes-job-state 1";
constexpr const char* kParkedHeader = "lanes-parked-class 1";

std::vector<std::string_view> split_words(std::string_view v) {
    std::vector<std::string_view> out;
    while (!v.empty()) {
        std::size_t sp = v.find(' ');
        if (sp != 0) out.push_back(v.substr(0, sp));
        if (sp == std::string_view::npos) break;
        v = v.substr(sp + 1);
    }
    return out;
}

Result<Rate> parse_state_rate(std::string_view v) {
    Rate r;
    if (!v.empty() && v.back() == '%') {
        std::string s(v.substr(0, v.size() - 1));
        char* end = nullptr;
        r.percent = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0' || !(r.percent > 0) || r.percent > 100) return fail("bad rate");
        return r;
    }
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), r.bits_per_second);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size()) return fail("bad rate");
    return r;
}

template <typename T>
bool parse_uint(std::string_view v, T& out) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return !v.empty() && ec == std::errc() && p == v.data() + v.size();
}

Result<std::string> read_file(const std::string& path, int* open_errno) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        *open_errno = errno;
        return fail(path + ": " + errno_text(errno));
    }
    // Only state this process's user (root on a node) wrote, in a file nobody else
    // can write, is trusted: a planted file must not steer root's actions.
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
        ::close(fd);
        *open_errno = EPERM;
        return fail(path + ": not a regular file owned by uid " + std::to_string(::geteuid()) +
                    " and writable only by it; refusing to trust it");
    }
    std::string text;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            ::close(fd);
            return fail(path + ": " + errno_text(err));
        }
        if (n == 0) break;
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > (1 << 20)) {
            ::close(fd);
            return fail(path + ": larger than 1 MiB");
        }
    }
    ::close(fd);
    return text;
}

enum class PairVerdict { Ok, BadValue, UnknownKey };

// A "<header>\nkey=value\n..." record (empty lines allowed): on_pair for each
// pair; what is wrong is named with origin:line.
Result<void> read_record(std::string_view text, const std::string& origin, std::string_view header,
                         const std::string& not_header,
                         const std::function<PairVerdict(std::string_view, std::string_view)>& on_pair) {
    bool saw_header = false;
    int lineno = 0;
    while (!text.empty()) {
        std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        ++lineno;
        auto bad = [&](const std::string& what) { return fail(origin + ":" + std::to_string(lineno) + ": " + what); };
        if (!saw_header) {
            if (line != header) return bad(not_header);
            saw_header = true;
            continue;
        }
        if (line.empty()) continue;
        std::size_t eq = line.find('=');
        if (eq == std::string_view::npos) return bad("expected key=value");
        std::string_view key = line.substr(0, eq), v = line.substr(eq + 1);
        switch (on_pair(key, v)) {
            case PairVerdict::Ok: break;
            case PairVerdict::UnknownKey: return bad("unknown key \"" + std::string(key) + "\"");
            case PairVerdict::BadValue:
                return bad("bad value for " + std::string(key) + ": \"" + std::string(v) + "\"");
        }
    }
    if (!saw_header) return fail(origin + ": empty");
    return {};
}

std::string minor_name(uint16_t minor) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "minor_%04x", minor);
    return buf;
}

std::string parked_name(uint16_t minor) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "parked/%04x", minor);
    return buf;
}

}  // namespace

std::string format_job_state(const JobState& s) {
    std::string out = std::string(kHeader) + "\n";
    auto line = [&](const char* key, const std::string& value) { out += std::string(key) + "=" + value + "\n"; };
    line("job_id", std::to_string(s.job_id));
    line("class", s.class_name);
    line("minor", std::to_string(s.minor));
    line("cgroup", s.cgroup);
    line("cgroup_key", s.cgroup_key);
    line("cgroup_owned", s.cgroup_owned ? "1" : "0");
    if (s.cgroup_slurm) line("cgroup_slurm", "1");
    line("cgroup_id", std::to_string(s.cgroup_id));
    line("cgroup_level", std::to_string(s.cgroup_level));
    line("root_major", std::to_string(s.root_major));
    if (s.dscp_marked) line("dscp_marked", std::to_string(*s.dscp_marked));
    if (s.net.dscp) line("dscp", std::to_string(*s.net.dscp));
    if (s.net.rate) line("rate", encode_rate(*s.net.rate));
    if (s.net.ceil) line("ceil", encode_rate(*s.net.ceil));
    if (s.net.rdma_traffic_class) line("rdma_traffic_class", std::to_string(*s.net.rdma_traffic_class));
    if (s.net.rdma_service_level) line("rdma_service_level", std::to_string(*s.net.rdma_service_level));
    line("rank", std::to_string(s.net.rank));
    if (!s.boot_id.empty()) line("boot_id", s.boot_id);
    if (!s.unshaped.empty()) line("unshaped", s.unshaped);
    for (const auto& d : s.devices)
        line("device", d.device + " " + std::to_string(d.rate_bits) + " " + std::to_string(d.ceil_bits) +
                           (d.ceil_now_bits ? " " + std::to_string(d.ceil_now_bits) : ""));
    if (!s.ceil_cause.empty()) line("ceil_cause", s.ceil_cause);
    for (const auto& d : s.pending_devices) line("pending_device", d);
    for (const auto& [dev, b] : s.counter_base)
        line("counter_base", dev + " " + std::to_string(b.bytes) + " " + std::to_string(b.packets) + " " +
                                 std::to_string(b.drops) + " " + std::to_string(b.overlimits));
    if (s.net.ingress_rate) line("ingress_rate", encode_rate(*s.net.ingress_rate));
    if (s.net.ingress_ceil) line("ingress_ceil", encode_rate(*s.net.ingress_ceil));
    for (const auto& d : s.ingress_devices)
        line("ingress_device", d.device + " " + std::to_string(d.rate_bits) + " " + std::to_string(d.ceil_bits));
    return out;
}

Result<JobState> parse_job_state(std::string_view text, const std::string& origin) {
    JobState s;
    bool saw_job = false, saw_minor = false;
    auto on_pair = [&](std::string_view key, std::string_view v) {
        bool ok = true;
        if (key == "job_id") {
            ok = parse_uint(v, s.job_id);
            saw_job = ok;
        } else if (key == "class") {
            s.class_name = v;
        } else if (key == "minor") {
            ok = parse_uint(v, s.minor);
            saw_minor = ok;
        } else if (key == "cgroup") {
            s.cgroup = v;
        } else if (key == "cgroup_key") {
            s.cgroup_key = v;
        } else if (key == "cgroup_owned") {
            ok = v == "0" || v == "1";
            s.cgroup_owned = v == "1";
        } else if (key == "cgroup_slurm") {
            ok = v == "0" || v == "1";
            s.cgroup_slurm = v == "1";
        } else if (key == "cgroup_id") {
            ok = parse_uint(v, s.cgroup_id);
        } else if (key == "cgroup_level") {
            ok = parse_uint(v, s.cgroup_level) && s.cgroup_level <= 255;
        } else if (key == "root_major") {
            ok = parse_uint(v, s.root_major) && s.root_major != 0xffff;
        } else if (key == "dscp_marked") {
            uint8_t d = 0;
            ok = parse_uint(v, d) && d < 64;
            s.dscp_marked = d;
        } else if (key == "dscp") {
            uint8_t d = 0;
            ok = parse_uint(v, d) && d < 64;
            s.net.dscp = d;
        } else if (key == "rate" || key == "ceil") {
            auto r = parse_state_rate(v);
            ok = r.has_value();
            if (ok) (key == "rate" ? s.net.rate : s.net.ceil) = *r;
        } else if (key == "rdma_traffic_class") {
            uint8_t x = 0;
            ok = parse_uint(v, x);
            s.net.rdma_traffic_class = x;
        } else if (key == "rdma_service_level") {
            uint8_t x = 0;
            ok = parse_uint(v, x);
            s.net.rdma_service_level = x;
        } else if (key == "rank") {
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), s.net.rank);
            ok = !v.empty() && ec == std::errc() && p == v.data() + v.size();
        } else if (key == "boot_id") {
            s.boot_id = v;
        } else if (key == "unshaped") {
            s.unshaped = v;
            ok = !v.empty();
        } else if (key == "device") {
            // "<dev> <rate> <ceil> [<ceil in force>]"
            auto words = split_words(v);
            JobDevice d;
            ok = (words.size() == 3 || words.size() == 4) && parse_uint(words[1], d.rate_bits) &&
                 parse_uint(words[2], d.ceil_bits) && (words.size() == 3 || parse_uint(words[3], d.ceil_now_bits));
            if (ok) {
                d.device = words[0];
                s.devices.push_back(std::move(d));
            }
        } else if (key == "ceil_cause") {
            s.ceil_cause = v;
        } else if (key == "pending_device") {
            ok = !v.empty() && v.find(' ') == std::string_view::npos;
            if (ok) s.pending_devices.emplace_back(v);
        } else if (key == "counter_base") {
            auto words = split_words(v);
            CounterBase b;
            ok = words.size() == 5 && parse_uint(words[1], b.bytes) && parse_uint(words[2], b.packets) &&
                 parse_uint(words[3], b.drops) && parse_uint(words[4], b.overlimits);
            if (ok) s.counter_base[std::string(words[0])] = b;
        } else if (key == "ingress_rate" || key == "ingress_ceil") {
            auto r = parse_state_rate(v);
            ok = r.has_value();
            if (ok) (key == "ingress_rate" ? s.net.ingress_rate : s.net.ingress_ceil) = *r;
        } else if (key == "ingress_device") {
            // "<dev> <rate> <ceil>": the job's class on the NIC's IFB
            auto words = split_words(v);
            JobDevice d;
            ok = words.size() == 3 && parse_uint(words[1], d.rate_bits) && parse_uint(words[2], d.ceil_bits);
            if (ok) {
                d.device = words[0];
                s.ingress_devices.push_back(std::move(d));
            }
        } else {
            return PairVerdict::UnknownKey;
        }
        return ok ? PairVerdict::Ok : PairVerdict::BadValue;
    };
    auto read = read_record(text, origin, kHeader,
                            "not a Lanes job state file (expected \"" + std::string(kHeader) + "\")", on_pair);
    if (!read) return std::unexpected(read.error());
    if (!saw_job || !saw_minor) return fail(origin + ": job_id or minor missing");
    return s;
}

std::string format_parked_class(const ParkedClass& p) {
    std::string out = std::string(kParkedHeader) + "\n";
    out += "minor=" + std::to_string(p.minor) + "\n";
    out += "root_major=" + std::to_string(p.root_major) + "\n";
    for (const auto& d : p.devices) out += "device=" + d + "\n";
    return out;
}

Result<ParkedClass> parse_parked_class(std::string_view text, const std::string& origin) {
    ParkedClass p;
    auto on_pair = [&](std::string_view key, std::string_view v) {
        bool ok = true;
        if (key == "minor") {
            ok = parse_uint(v, p.minor) && p.minor >= kFirstJobMinor && p.minor <= kLastJobMinor;
        } else if (key == "root_major") {
            ok = parse_uint(v, p.root_major) && p.root_major != 0 && p.root_major != 0xffff;
        } else if (key == "device") {
            ok = !v.empty() && v.find(' ') == std::string_view::npos;
            p.devices.emplace_back(v);
        } else {
            return PairVerdict::UnknownKey;
        }
        return ok ? PairVerdict::Ok : PairVerdict::BadValue;
    };
    auto read = read_record(text, origin, kParkedHeader, "not a Lanes parked class record", on_pair);
    if (!read) return std::unexpected(read.error());
    if (p.minor == 0 || p.root_major == 0 || p.devices.empty())
        return fail(origin + ": minor, root_major or device missing");
    std::sort(p.devices.begin(), p.devices.end());
    return p;
}

JobStateStore::~JobStateStore() {
    if (lock_fd_ >= 0) ::close(lock_fd_);
}

JobStateStore::Lock::~Lock() {
    if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

std::string JobStateStore::job_path(uint32_t job_id) const { return dir_ + "/job_" + std::to_string(job_id); }

Result<void> JobStateStore::prepare() {
    if (dir_.empty() || dir_[0] != '/') return fail("state_dir \"" + dir_ + "\" must be an absolute path");
    // mkdir -p, the last component 0700.
    for (std::size_t pos = 1; pos != std::string::npos;) {
        pos = dir_.find('/', pos + 1);
        std::string part = dir_.substr(0, pos);
        if (::mkdir(part.c_str(), pos == std::string::npos ? 0700 : 0755) != 0 && errno != EEXIST)
            return fail("state_dir " + part + ": " + errno_text(errno));
    }
    struct stat st {};
    if (::lstat(dir_.c_str(), &st) != 0) return fail("state_dir " + dir_ + ": " + errno_text(errno));
    if (!S_ISDIR(st.st_mode)) return fail("state_dir " + dir_ + ": not a directory");
    if (st.st_uid != ::geteuid())
        return fail("state_dir " + dir_ + ": owned by uid " + std::to_string(st.st_uid) + ", not us");
    if ((st.st_mode & 07777) != 0700 && ::chmod(dir_.c_str(), 0700) != 0)
        return fail("state_dir " + dir_ + ": chmod 0700: " + errno_text(errno));
    if (lock_fd_ < 0) {
        std::string path = dir_ + "/lock";
        lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock_fd_ < 0) return fail(path + ": " + errno_text(errno));
    }
    return {};
}

Result<JobStateStore::Lock> JobStateStore::lock() {
    if (lock_fd_ < 0) {
        auto r = prepare();
        if (!r) return std::unexpected(r.error());
    }
    while (::flock(lock_fd_, LOCK_EX) != 0) {
        if (errno != EINTR) return fail("flock " + dir_ + "/lock: " + errno_text(errno));
    }
    return Lock(lock_fd_);
}

Result<std::optional<JobState>> JobStateStore::load(uint32_t job_id) const {
    // The directory too: owned by us, not a symlink, writable by nobody else.
    struct stat dir_st {};
    if (::lstat(dir_.c_str(), &dir_st) != 0) {
        if (errno == ENOENT) return std::optional<JobState>{};
        return fail(dir_ + ": " + errno_text(errno));
    }
    if (!S_ISDIR(dir_st.st_mode) || dir_st.st_uid != ::geteuid() || (dir_st.st_mode & 022) != 0)
        return fail(dir_ + ": state directory is not a directory owned by uid " + std::to_string(::geteuid()) +
                    " and writable only by it; refusing to trust it");
    std::string path = job_path(job_id);
    int open_errno = 0;
    auto text = read_file(path, &open_errno);
    if (!text) {
        if (open_errno == ENOENT) return std::optional<JobState>{};
        return fail(text.error().message);
    }
    auto st = parse_job_state(*text, path);
    if (!st) return std::unexpected(st.error());
    if (st->job_id != job_id) return fail(path + ": holds job " + std::to_string(st->job_id));
    return std::optional<JobState>(std::move(*st));
}

std::vector<JobState> JobStateStore::load_all(std::vector<std::string>* errors) const {
    std::vector<JobState> out;
    DIR* d = ::opendir(dir_.c_str());
    if (!d) {
        if (errno != ENOENT && errors) errors->push_back(dir_ + ": " + errno_text(errno));
        return out;
    }
    while (dirent* e = ::readdir(d)) {
        std::string_view name = e->d_name;
        if (!name.starts_with("job_")) continue;
        uint32_t id = 0;
        if (!parse_uint(name.substr(4), id)) continue;  // job_7.tmp and the like
        auto st = load(id);
        if (!st) {
            if (errors) errors->push_back(st.error().message);
        } else if (*st) {
            out.push_back(std::move(**st));
        }
    }
    ::closedir(d);
    std::sort(out.begin(), out.end(), [](const JobState& a, const JobState& b) { return a.job_id < b.job_id; });
    return out;
}

Result<void> JobStateStore::save(const JobState& state) {
    auto r = write_file_atomically(job_path(state.job_id), format_job_state(state), 0600, FileSync::PageCacheOnly);
    if (!r) return fail(r.error().message);
    return {};
}

Result<void> JobStateStore::erase(uint32_t job_id) {
    std::string path = job_path(job_id);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return fail(path + ": " + errno_text(errno));
    return {};
}

std::optional<uint32_t> JobStateStore::minor_owner(uint16_t minor) const {
    std::string path = dir_ + "/" + minor_name(minor);
    char buf[32];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    if (n <= 0) return std::nullopt;
    uint32_t id = 0;
    if (!parse_uint(std::string_view(buf, static_cast<size_t>(n)), id)) return std::nullopt;
    return id;
}

Result<void> JobStateStore::claim_minor(uint16_t minor, uint32_t job_id) {
    std::string path = dir_ + "/" + minor_name(minor), target = std::to_string(job_id);
    if (::symlink(target.c_str(), path.c_str()) == 0) return {};
    if (errno != EEXIST) return fail(path + ": " + errno_text(errno));
    auto owner = minor_owner(minor);
    if (owner == job_id) return {};
    // A claim whose job has no state file is stale (a crash between claim and save).
    if (owner && ::access(job_path(*owner).c_str(), F_OK) != 0 && errno == ENOENT) {
        std::string tmp = path + ".tmp";
        ::unlink(tmp.c_str());
        if (::symlink(target.c_str(), tmp.c_str()) == 0 && ::rename(tmp.c_str(), path.c_str()) == 0) return {};
        return fail(path + ": " + errno_text(errno));
    }
    return fail("HTB minor " + std::to_string(minor) + " is held by job " +
                (owner ? std::to_string(*owner) : std::string("?")));
}

Result<void> JobStateStore::release_minor(uint16_t minor, uint32_t job_id) {
    if (minor_owner(minor) != job_id) return {};
    std::string path = dir_ + "/" + minor_name(minor);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return fail(path + ": " + errno_text(errno));
    return {};
}

}  // namespace lanes

namespace lanes {

Result<void> JobStateStore::save_parked(const ParkedClass& parked) {
    const std::string dir = dir_ + "/parked";
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return fail(dir + ": " + errno_text(errno));
    auto r = write_file_atomically(dir_ + "/" + parked_name(parked.minor), format_parked_class(parked), 0600,
                                   FileSync::PageCacheOnly);
    if (!r) return fail(r.error().message);
    return {};
}

std::vector<ParkedClass> JobStateStore::load_parked(std::vector<std::string>* errors) const {
    std::vector<ParkedClass> out;
    const std::string dir = dir_ + "/parked";
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        std::string_view name = e->d_name;
        uint16_t minor = 0;
        if (name.size() != 4 || std::from_chars(name.data(), name.data() + 4, minor, 16).ptr != name.data() + 4)
            continue;  // "." and tmp files
        const std::string path = dir + "/" + std::string(name);
        int open_errno = 0;
        auto text = read_file(path, &open_errno);
        Result<ParkedClass> p = text ? parse_parked_class(*text, path) : std::unexpected(text.error());
        if (p && p->minor != minor) p = fail(path + ": holds minor " + std::to_string(p->minor));
        if (p) out.push_back(std::move(*p));
        else if (open_errno != ENOENT && errors) errors->push_back(p.error().message);
    }
    ::closedir(d);
    std::sort(out.begin(), out.end(), [](const ParkedClass& a, const ParkedClass& b) { return a.minor < b.minor; });
    return out;
}

Result<void> JobStateStore::erase_parked(uint16_t minor) {
    const std::string path = dir_ + "/" + parked_name(minor);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return fail(path + ": " + errno_text(errno));
    return {};
}

bool JobStateStore::is_parked(uint16_t minor) const {
    return ::access((dir_ + "/" + parked_name(minor)).c_str(), F_OK) == 0;
}

std::size_t JobStateStore::parked_count() const {
    std::size_t n = 0;
    DIR* d = ::opendir((dir_ + "/parked").c_str());
    if (!d) return 0;
    while (dirent* e = ::readdir(d))
        if (std::strlen(e->d_name) == 4) ++n;
    ::closedir(d);
    return n;
}

uint32_t JobStateStore::shaped_jobs() const {
    int open_errno = 0;
    auto text = read_file(dir_ + "/shaped_jobs", &open_errno);
    uint32_t n = 0;
    if (!text) return 0;
    std::string_view v = *text;
    while (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    return parse_uint(v, n) ? n : 0;
}

Result<void> JobStateStore::set_shaped_jobs(uint32_t count) {
    auto r = write_file_atomically(dir_ + "/shaped_jobs", std::to_string(count) + "\n", 0600, FileSync::PageCacheOnly);
    if (!r) return fail(r.error().message);
    return {};
}

}  // namespace lanes
