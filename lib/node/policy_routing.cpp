// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/policy_routing.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <nftables/libnftables.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "node/netlink_socket.hpp"
#include "node/nl_msg.hpp"

namespace lanes {
namespace {

std::string family_name(int family) { return family == AF_INET6 ? "IPv6" : "IPv4"; }

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return {};
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// rt_tables(5): the files iproute2 reads, the last naming the table wins.
std::optional<uint32_t> lookup_table_name(const std::string& name) {
    std::optional<uint32_t> found;
    for (const char* dir : {"/usr/share/iproute2", "/usr/lib/iproute2", "/etc/iproute2"}) {
        const std::string base = dir;
        if (auto t = rt_tables_lookup(read_file(base + "/rt_tables"), name)) found = t;
        if (DIR* d = opendir((base + "/rt_tables.d").c_str())) {
            std::vector<std::string> files;
            while (dirent* e = readdir(d)) {
                std::string f = e->d_name;
                if (f.size() > 5 && f.ends_with(".conf")) files.push_back(f);
            }
            closedir(d);
            std::sort(files.begin(), files.end());
            for (const auto& f : files)
                if (auto t = rt_tables_lookup(read_file(base + "/rt_tables.d/" + f), name)) found = t;
        }
    }
    return found;
}

std::string addr_text(int family, const void* data) {
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(family, data, buf, sizeof buf);
    return buf;
}

class Lock {
public:
    explicit Lock(int fd) : fd_(fd) {}
    ~Lock() {
        if (fd_ >= 0) {
            flock(fd_, LOCK_UN);
            ::close(fd_);
        }
    }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

private:
    int fd_;
};

}  // namespace

bool config_has_paths(const Config& config) {
    return std::any_of(config.classes.begin(), config.classes.end(), [](const auto& kv) {
        const auto& p = kv.second.path;
        return p && (p->table || !p->table_name.empty() || !p->device.empty());
    });
}

struct PathRouter::Impl {
    NodeConfig node;
    LogSink log;
    NetlinkSocket sock;
    nft_ctx* nft = nullptr;
    std::string dir;

    ~Impl() {
        if (nft) nft_ctx_free(nft);
    }

    void say(LogLevel level, const std::string& text) const {
        if (log) log(level, text);
    }

    // ---- records ----
    std::string record_path(uint32_t job) const { return dir + "/job_" + std::to_string(job); }

    Result<std::unique_ptr<Lock>> lock() {
        const std::string path = dir + "/lock";
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) return fail("lanes: open " + path + ": " + std::strerror(errno));
        while (flock(fd, LOCK_EX) != 0) {
            if (errno == EINTR) continue;
            int e = errno;
            ::close(fd);
            return fail("lanes: lock " + path + ": " + std::strerror(e));
        }
        return std::make_unique<Lock>(fd);
    }

    std::vector<PathJob> records() const {
        std::vector<PathJob> out;
        DIR* d = opendir(dir.c_str());
        if (!d) return out;
        while (dirent* e = readdir(d)) {
            std::string f = e->d_name;
            if (!f.starts_with("job_")) continue;
            auto job = decode_path_job(read_file(dir + "/" + f));
            if (!job) {
                say(LogLevel::Error, "lanes: path record " + f + " ignored: " + job.error().message);
                continue;
            }
            out.push_back(*job);
        }
        closedir(d);
        std::sort(out.begin(), out.end(), [](const PathJob& a, const PathJob& b) { return a.job_id < b.job_id; });
        return out;
    }

    // A path record lives no longer than the job's state file (JobStateStore,
    // state_dir/job_<id>): a job whose state went (slurmd's start-up reconcile,
    // lanesctl gc) is gone, and its path with it.
    bool has_job_state(uint32_t job) const {
        return ::access((node.state_dir + "/job_" + std::to_string(job)).c_str(), F_OK) == 0;
    }
    std::vector<PathJob> live_records() const {
        std::vector<PathJob> out;
        for (auto& j : records())
            if (has_job_state(j.job_id)) out.push_back(std::move(j));
        return out;
    }

    Result<void> write_record(const PathJob& job) {
        const std::string path = record_path(job.job_id), tmp = path + ".tmp";
        {
            std::ofstream out(tmp, std::ios::trunc);
            out << encode_path_job(job);
            out.flush();
            if (!out) return fail("lanes: JobId=" + std::to_string(job.job_id) + ": cannot write " + tmp);
        }
        if (::rename(tmp.c_str(), path.c_str()) != 0)
            return fail("lanes: JobId=" + std::to_string(job.job_id) + ": rename " + tmp + ": " + std::strerror(errno));
        return {};
    }

    // ---- rtnetlink ----
    std::string error_text(const NetlinkSocket::Outcome& o) { return netlink_error_text(o); }

    MsgPtr rule_msg(int type, int flags, const PathRule& r) {
        MsgPtr m(nlmsg_alloc_simple(type, flags));
        fib_rule_hdr h{};
        h.family = static_cast<uint8_t>(r.family);
        h.action = FR_ACT_TO_TBL;
        h.table = static_cast<uint8_t>(r.table < 256 ? r.table : static_cast<uint32_t>(RT_TABLE_UNSPEC));
        nlmsg_append(m.get(), &h, sizeof h, NLMSG_ALIGNTO);
        nla_put_u32(m.get(), FRA_PRIORITY, kPathRulePriority);
        nla_put_u32(m.get(), FRA_FWMARK, r.mark);
        nla_put_u32(m.get(), FRA_FWMASK, 0xffffffffu);
        nla_put_u32(m.get(), FRA_TABLE, r.table);
        return m;
    }

    Result<void> add_rule(const PathRule& r) {
        MsgPtr m = rule_msg(RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, r);
        auto o = sock.request(nlmsg_hdr(m.get()), false);
        if (!o && o.error != -EEXIST)
            return fail("ip rule fwmark " + path_mark_text(r.mark) + " lookup " + std::to_string(r.table) + " (" +
                        family_name(r.family) + "): " + error_text(o));
        return {};
    }

    Result<void> delete_rule(const PathRule& r) {
        MsgPtr m = rule_msg(RTM_DELRULE, 0, r);
        auto o = sock.request(nlmsg_hdr(m.get()), false);
        if (!o && o.error != -ENOENT)
            return fail("delete ip rule fwmark " + path_mark_text(r.mark) + " (" + family_name(r.family) +
                        "): " + error_text(o));
        return {};
    }

    Result<std::vector<PathRule>> dump_rules() {
        std::vector<PathRule> out;
        for (int family : {AF_INET, AF_INET6}) {
            MsgPtr m(nlmsg_alloc_simple(RTM_GETRULE, 0));
            fib_rule_hdr h{};
            h.family = static_cast<uint8_t>(family);
            nlmsg_append(m.get(), &h, sizeof h, NLMSG_ALIGNTO);
            auto o = sock.request(nlmsg_hdr(m.get()), true, [&](nlmsghdr* nh) {
                if (nh->nlmsg_type != RTM_NEWRULE) return;
                auto* fh = static_cast<fib_rule_hdr*>(nlmsg_data(nh));
                nlattr* tb[FRA_MAX + 1];
                if (nlmsg_parse(nh, sizeof(fib_rule_hdr), tb, FRA_MAX, nullptr) != 0) return;
                if (!tb[FRA_PRIORITY] || nla_get_u32(tb[FRA_PRIORITY]) != kPathRulePriority || !tb[FRA_FWMARK]) return;
                const uint32_t mark = nla_get_u32(tb[FRA_FWMARK]);
                if (!is_path_mark(mark)) return;
                const uint32_t table = tb[FRA_TABLE] ? nla_get_u32(tb[FRA_TABLE]) : fh->table;
                out.push_back(PathRule{family, mark, table});
            });
            if (!o) return fail("dump " + family_name(family) + " rules: " + error_text(o));
        }
        std::sort(out.begin(), out.end());
        return out;
    }

    MsgPtr route_msg(int type, int flags, const PathRoute& r) {
        MsgPtr m(nlmsg_alloc_simple(type, flags));
        rtmsg rt{};
        rt.rtm_family = static_cast<uint8_t>(r.family);
        rt.rtm_table = RT_TABLE_UNSPEC;
        // A delete matches any protocol: a route someone added by hand
        // (`ip route add`, proto boot) to Lanes' table goes as well.
        rt.rtm_protocol = type == RTM_DELROUTE ? RTPROT_UNSPEC : RTPROT_STATIC;
        rt.rtm_scope = r.family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
        rt.rtm_type = RTN_UNICAST;
        // dst: a canonical CIDR (path_destinations); a default route has no RTA_DST.
        const std::size_t slash = r.dst.find('/');
        unsigned char dst[16] = {};
        if (slash != std::string::npos && inet_pton(r.family, r.dst.substr(0, slash).c_str(), dst) == 1)
            rt.rtm_dst_len = static_cast<uint8_t>(std::atoi(r.dst.c_str() + slash + 1));
        const bool has_dst = rt.rtm_dst_len > 0;
        nlmsg_append(m.get(), &rt, sizeof rt, NLMSG_ALIGNTO);
        nla_put_u32(m.get(), RTA_TABLE, r.table);
        nla_put_u32(m.get(), RTA_OIF, static_cast<uint32_t>(r.ifindex));
        if (has_dst) nla_put(m.get(), RTA_DST, r.family == AF_INET ? 4 : 16, dst);
        unsigned char bin[16];
        if (!r.src.empty() && inet_pton(r.family, r.src.c_str(), bin) == 1)
            nla_put(m.get(), RTA_PREFSRC, r.family == AF_INET ? 4 : 16, bin);
        return m;
    }

    std::string route_text(const PathRoute& r) {
        char name[IF_NAMESIZE] = "?";
        if_indextoname(static_cast<unsigned>(r.ifindex), name);
        return r.dst + " dev " + name + " src " + r.src + " table " + path_mark_text(r.table);
    }

    Result<void> add_route(const PathRoute& r) {
        MsgPtr m = route_msg(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, r);
        auto o = sock.request(nlmsg_hdr(m.get()), false);
        if (!o) return fail("route " + route_text(r) + ": " + error_text(o));
        return {};
    }

    Result<void> delete_route(const PathRoute& r) {
        MsgPtr m = route_msg(RTM_DELROUTE, 0, r);
        auto o = sock.request(nlmsg_hdr(m.get()), false);
        if (!o && o.error != -ESRCH && o.error != -ENOENT && o.error != -ENODEV)
            return fail("delete route " + route_text(r) + ": " + error_text(o));
        return {};
    }

    // Routes of every table: those in `table_filter` (all when it returns true).
    struct SeenRoute {
        int family = 0;
        uint32_t table = 0;
        int ifindex = 0;
        std::string src;
        std::string dst;  // "10.1.0.0/24", "::/0"
        bool unicast = false;
    };
    Result<std::vector<SeenRoute>> dump_routes() {
        std::vector<SeenRoute> out;
        for (int family : {AF_INET, AF_INET6}) {
            MsgPtr m(nlmsg_alloc_simple(RTM_GETROUTE, 0));
            rtmsg rt{};
            rt.rtm_family = static_cast<uint8_t>(family);
            nlmsg_append(m.get(), &rt, sizeof rt, NLMSG_ALIGNTO);
            auto o = sock.request(nlmsg_hdr(m.get()), true, [&](nlmsghdr* nh) {
                if (nh->nlmsg_type != RTM_NEWROUTE) return;
                auto* r = static_cast<rtmsg*>(nlmsg_data(nh));
                nlattr* tb[RTA_MAX + 1];
                if (nlmsg_parse(nh, sizeof(rtmsg), tb, RTA_MAX, nullptr) != 0) return;
                SeenRoute s;
                s.family = family;
                s.table = tb[RTA_TABLE] ? nla_get_u32(tb[RTA_TABLE]) : r->rtm_table;
                s.ifindex = tb[RTA_OIF] ? static_cast<int>(nla_get_u32(tb[RTA_OIF])) : 0;
                if (tb[RTA_PREFSRC]) s.src = addr_text(family, nla_data(tb[RTA_PREFSRC]));
                unsigned char zero[16] = {};
                s.dst = addr_text(family, tb[RTA_DST] ? nla_data(tb[RTA_DST]) : zero) + "/" +
                        std::to_string(r->rtm_dst_len);
                s.unicast = r->rtm_type == RTN_UNICAST;
                out.push_back(std::move(s));
            });
            if (!o) return fail("dump " + family_name(family) + " routes: " + error_text(o));
        }
        return out;
    }

    // The interface `name`: index, and (vlan) whether it is VLAN `id` on `parent`.
    struct LinkInfo {
        int ifindex = 0;
        int parent = 0;
        bool is_vlan = false;
        int vlan_id = -1;
    };
    Result<LinkInfo> link(const std::string& name) {
        MsgPtr m(nlmsg_alloc_simple(RTM_GETLINK, 0));
        ifinfomsg ifi{};
        ifi.ifi_family = AF_UNSPEC;
        nlmsg_append(m.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO);
        nla_put_string(m.get(), IFLA_IFNAME, name.c_str());
        LinkInfo info;
        auto o = sock.request(nlmsg_hdr(m.get()), false, [&](nlmsghdr* nh) {
            if (nh->nlmsg_type != RTM_NEWLINK) return;
            auto* i = static_cast<ifinfomsg*>(nlmsg_data(nh));
            info.ifindex = i->ifi_index;
            nlattr* tb[IFLA_MAX + 1];
            if (nlmsg_parse(nh, sizeof(ifinfomsg), tb, IFLA_MAX, nullptr) != 0) return;
            if (tb[IFLA_LINK]) info.parent = static_cast<int>(nla_get_u32(tb[IFLA_LINK]));
            if (!tb[IFLA_LINKINFO]) return;
            nlattr* li[IFLA_INFO_MAX + 1];
            if (nla_parse_nested(li, IFLA_INFO_MAX, tb[IFLA_LINKINFO], nullptr) != 0) return;
            if (li[IFLA_INFO_KIND] && std::string(nla_get_string(li[IFLA_INFO_KIND])) == "vlan") {
                info.is_vlan = true;
                if (li[IFLA_INFO_DATA]) {
                    nlattr* vd[IFLA_VLAN_MAX + 1];
                    if (nla_parse_nested(vd, IFLA_VLAN_MAX, li[IFLA_INFO_DATA], nullptr) == 0 && vd[IFLA_VLAN_ID])
                        info.vlan_id = nla_get_u16(vd[IFLA_VLAN_ID]);
                }
            }
        });
        if (!o) {
            if (o.error == -ENODEV) return fail("no such interface on this node");
            return fail(error_text(o));
        }
        return info;
    }

    // The global addresses on `ifindex`, in the kernel's order, with their subnets.
    Result<std::vector<DeviceAddress>> addresses(int ifindex) {
        std::vector<DeviceAddress> out;
        MsgPtr m(nlmsg_alloc_simple(RTM_GETADDR, 0));
        ifaddrmsg ifa{};
        ifa.ifa_family = AF_UNSPEC;
        nlmsg_append(m.get(), &ifa, sizeof ifa, NLMSG_ALIGNTO);
        auto o = sock.request(nlmsg_hdr(m.get()), true, [&](nlmsghdr* nh) {
            if (nh->nlmsg_type != RTM_NEWADDR) return;
            auto* a = static_cast<ifaddrmsg*>(nlmsg_data(nh));
            if (static_cast<int>(a->ifa_index) != ifindex || a->ifa_scope != RT_SCOPE_UNIVERSE) return;
            if (a->ifa_flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED | IFA_F_DEPRECATED)) return;
            nlattr* tb[IFA_MAX + 1];
            if (nlmsg_parse(nh, sizeof(ifaddrmsg), tb, IFA_MAX, nullptr) != 0) return;
            nlattr* at = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
            if (!at || (a->ifa_family != AF_INET && a->ifa_family != AF_INET6)) return;
            // The connected subnet: IFA_ADDRESS (the peer on a point-to-point
            // link) under the prefix length, as the kernel's own prefix route.
            nlattr* peer = tb[IFA_ADDRESS] ? tb[IFA_ADDRESS] : at;
            DeviceAddress d;
            d.family = a->ifa_family;
            d.address = addr_text(a->ifa_family, nla_data(at));
            d.subnet = subnet_of(addr_text(a->ifa_family, nla_data(peer)), a->ifa_prefixlen);
            out.push_back(std::move(d));
        });
        if (!o) return fail("dump addresses: " + error_text(o));
        return out;
    }

    // ---- nftables ----
    Result<std::string> nft_run(const std::string& script) {
        if (nft_run_cmd_from_buffer(nft, script.c_str()) != 0) {
            std::string err = nft_ctx_get_error_buffer(nft);
            while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
            return fail("nft: " + err);
        }
        return std::string(nft_ctx_get_output_buffer(nft));
    }

    // The table as listed (its map's elements, and what differs from the base
    // script); `table_exists` is false, and the listing empty, without it.
    void observe_table(bool* table_exists, PathNftListing* listing) {
        *table_exists = false;
        *listing = {};
        auto listed = nft_run(std::string("list table inet ") + kPathNftTable);
        if (!listed) return;
        *table_exists = true;
        *listing = parse_path_nft_listing(*listed);
    }

    static std::string classid_text(uint32_t prio) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%x:%x", prio >> 16, prio & 0xffff);
        return buf;
    }

    // ---- the one reconciler ----
    Result<PathObjects> observe(bool* table_exists, PathNftListing* listing) {
        PathObjects seen;
        auto rules = dump_rules();
        if (!rules) return fail(rules.error());
        seen.rules = *rules;
        auto routes = dump_routes();
        if (!routes) return fail(routes.error());
        for (const auto& r : *routes)
            if (is_path_mark(r.table) && r.unicast)
                seen.routes.push_back(PathRoute{r.family, r.table, r.dst, r.ifindex, r.src});
        std::sort(seen.routes.begin(), seen.routes.end());
        observe_table(table_exists, listing);
        seen.elements = listing->elements;
        return seen;
    }

    // Brings the kernel to what `jobs` want; every change is a line of `done`.
    Result<void> converge_to(const std::vector<PathJob>& jobs, bool dry_run, std::vector<std::string>& done) {
        bool table_exists = false;
        PathNftListing listing;
        auto seen = observe(&table_exists, &listing);
        if (!seen) return fail(seen.error());
        // A path's device made again since the prolog (a driver reload, a VF
        // reset) has a new index, and its routes went with the old one: the
        // job's routes follow the device's name, and its record is written
        // with the new index (so that the next converge has nothing to do).
        std::vector<PathJob> current = jobs;
        for (auto& j : current) {
            if (!j.path.owned_table || j.path.device.empty()) continue;
            const int now = static_cast<int>(if_nametoindex(j.path.device.c_str()));
            if (now == 0 || now == j.path.ifindex) continue;
            done.push_back("path device " + j.path.device + " of JobId=" + std::to_string(j.job_id) +
                           ": made again (ifindex " + std::to_string(j.path.ifindex) + " -> " + std::to_string(now) +
                           "), its routes follow it");
            j.path.ifindex = now;
            if (!dry_run)
                if (auto w = write_record(j); !w) return fail(w.error());
        }
        PathObjects want = desired_path_objects(current);
        // A path's device that went away since the prolog (its routes went with
        // it): nothing to route through; the class's rule finds an empty table and
        // its packets take the main table. Logged, never an error that would hold
        // up the other classes' repairs or a new job's launch.
        std::erase_if(want.routes, [&](const PathRoute& r) {
            char name[IF_NAMESIZE];
            if (if_indextoname(static_cast<unsigned>(r.ifindex), name)) return false;
            say(LogLevel::Error, "lanes: path table " + path_mark_text(r.table) + ": its device (ifindex " +
                                     std::to_string(r.ifindex) + ") is gone; its jobs take the main table");
            return true;
        });
        const PathRepairs rep = plan_path_repairs(want, *seen);
        // A chain deleted, flushed or added to (a firewall reload, an admin):
        // the base script again, which keeps the map's elements.
        const bool need_base = !jobs.empty() && (!table_exists || !listing.damage.empty());
        if (need_base)
            done.push_back("nft table inet " + std::string(kPathNftTable) + ": " +
                           (table_exists ? listing.damage + ", rewritten" : std::string("missing, added")));
        for (const auto& r : rep.add_rules)
            done.push_back("ip rule fwmark " + path_mark_text(r.mark) + " lookup " + std::to_string(r.table) + " (" +
                           family_name(r.family) + "): added");
        for (const auto& r : rep.delete_rules)
            done.push_back("ip rule fwmark " + path_mark_text(r.mark) + " (" + family_name(r.family) +
                           "): no job on the path, deleted");
        for (const auto& r : rep.add_routes) done.push_back("route " + route_text(r) + ": added");
        for (const auto& r : rep.delete_routes) done.push_back("route " + route_text(r) + ": not wanted, deleted");
        for (const auto& [p, m] : rep.add_elements)
            done.push_back("nft element " + classid_text(p) + " : " + path_mark_text(m) + ": added");
        for (uint32_t p : rep.delete_elements) done.push_back("nft element " + classid_text(p) + ": deleted");
        if (dry_run) return {};
        // Order: routes before rules (a rule never points at an empty table),
        // elements last (no packet is marked before its rule exists); removal in
        // the opposite order.
        if (need_base) {
            auto r = nft_run(path_nft_repair_script(listing));
            if (!r) return fail(r.error());
        }
        if (!rep.delete_elements.empty() && !jobs.empty()) {
            std::string script;
            for (uint32_t p : rep.delete_elements)
                script += std::string("delete element inet ") + kPathNftTable + " marks { " + classid_text(p) + " }\n";
            (void)nft_run(script);
        }
        // One failing object (a device gone since the prolog) does not hold up the
        // others' repairs; the failures are reported together.
        std::string errors;
        auto note = [&errors](const Result<void>& x) {
            if (!x) errors += (errors.empty() ? "" : "; ") + x.error().message;
        };
        for (const auto& r : rep.delete_rules) note(delete_rule(r));
        for (const auto& r : rep.delete_routes) note(delete_route(r));
        for (const auto& r : rep.add_routes) note(add_route(r));
        for (const auto& r : rep.add_rules) note(add_rule(r));
        if (!errors.empty()) return fail(errors);
        if (!rep.add_elements.empty()) {
            // One transaction; another mark on the same key (a parked class taken
            // over) is replaced in it.
            std::string script;
            for (const auto& [p, m] : rep.add_elements) {
                if (seen->elements.count(p))
                    script +=
                        std::string("delete element inet ") + kPathNftTable + " marks { " + classid_text(p) + " }\n";
                script += std::string("add element inet ") + kPathNftTable + " marks { " + classid_text(p) + " : " +
                          path_mark_text(m) + " }\n";
            }
            auto r = nft_run(script);
            if (!r) return fail(r.error());
        }
        if (jobs.empty() && table_exists) (void)nft_run(std::string("delete table inet ") + kPathNftTable);
        return {};
    }
};

PathRouter::PathRouter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PathRouter::~PathRouter() = default;

Result<std::unique_ptr<PathRouter>> PathRouter::open(const NodeConfig& node, LogSink log) {
    auto impl = std::make_unique<Impl>();
    impl->node = node;
    impl->log = std::move(log);
    impl->dir = node.state_dir + "/paths";
    ::mkdir(node.state_dir.c_str(), 0700);
    if (::mkdir(impl->dir.c_str(), 0700) != 0 && errno != EEXIST)
        return fail("lanes: mkdir " + impl->dir + ": " + std::strerror(errno));
    if (auto r = impl->sock.open(NETLINK_ROUTE); !r) return fail(r.error());
    impl->nft = nft_ctx_new(NFT_CTX_DEFAULT);
    if (!impl->nft) return fail("lanes: nft_ctx_new failed");
    nft_ctx_buffer_output(impl->nft);
    nft_ctx_buffer_error(impl->nft);
    return std::unique_ptr<PathRouter>(new PathRouter(std::move(impl)));
}

Result<ResolvedPath> PathRouter::resolve(const ClassConfig& c) {
    if (!c.path) return fail("class " + c.name + " has no path");
    const ClassPath& p = *c.path;
    ResolvedPath out;
    out.class_name = c.name;
    out.mark = path_mark(c.name);
    const std::string key = "classes." + c.name + ".";
    if (p.table || !p.table_name.empty()) {
        if (p.table) {
            out.table = *p.table;
        } else {
            auto t = lookup_table_name(p.table_name);
            if (!t)
                return fail(key + "route_table: table \"" + p.table_name +
                            "\" is not in /etc/iproute2/rt_tables (or rt_tables.d) on this node");
            out.table = *t;
        }
        auto routes = impl_->dump_routes();
        if (!routes) return fail(key + "route_table: " + routes.error().message);
        const bool any =
            std::any_of(routes->begin(), routes->end(), [&](const Impl::SeenRoute& r) { return r.table == out.table; });
        if (!any)
            return fail(key + "route_table: table " + std::to_string(out.table) +
                        (p.table_name.empty() ? "" : " (\"" + p.table_name + "\")") +
                        " has no routes on this node (fill it first, e.g. ip route add default via GW table " +
                        std::to_string(out.table) + ")");
        return out;
    }
    const std::string dev = p.link();
    const std::string which = p.vlan ? "vlan" : "egress_device";
    if (p.vlan) {
        auto parent = impl_->link(p.device);
        if (!parent) return fail(key + "egress_device: \"" + p.device + "\": " + parent.error().message);
        auto v = impl_->link(dev);
        if (!v) return fail(key + "vlan: the VLAN interface \"" + dev + "\": " + v.error().message);
        if (!v->is_vlan || v->vlan_id != *p.vlan || v->parent != parent->ifindex)
            return fail(key + "vlan: \"" + dev + "\" is not VLAN " + std::to_string(*p.vlan) + " on \"" + p.device +
                        "\"");
    }
    auto l = impl_->link(dev);
    if (!l) return fail(key + which + ": \"" + dev + "\": " + l.error().message);
    auto a = impl_->addresses(l->ifindex);
    if (!a) return fail(key + which + ": \"" + dev + "\": " + a.error().message);
    if (a->empty())
        return fail(key + which + ": \"" + dev + "\" has no global IPv4 or IPv6 address (the path's source address)");
    out.owned_table = true;
    out.table = out.mark;
    out.device = dev;
    out.ifindex = l->ifindex;
    for (const auto& d : *a) {
        std::string& src = d.family == AF_INET ? out.src4 : out.src6;
        if (src.empty()) src = d.address;
    }
    out.destinations = path_destinations(*a, p.egress_prefixes);
    return out;
}

Result<void> PathRouter::attach(uint32_t job_id, uint32_t priority, const ResolvedPath& path) {
    auto lock = impl_->lock();
    if (!lock) return fail(lock.error());
    const std::string who = "JobId=" + std::to_string(job_id);
    PathJob job{job_id, priority, path};
    if (auto w = impl_->write_record(job); !w) return fail(w.error());
    auto jobs = impl_->live_records();
    std::vector<std::string> done;
    if (auto r = impl_->converge_to(jobs, false, done); !r) {
        // Nothing half-applied: the record goes, the kernel goes back to the others'.
        ::unlink(impl_->record_path(job_id).c_str());
        std::vector<std::string> undone;
        if (auto u = impl_->converge_to(impl_->live_records(), false, undone); !u)
            impl_->say(LogLevel::Error, "lanes: " + who + ": path undo incomplete: " + u.error().message);
        return fail("lanes: " + who + ": path " + path.describe() + " of class " + path.class_name + ": " +
                    r.error().message);
    }
    for (const auto& d : done) impl_->say(LogLevel::Debug, "lanes: " + who + ": " + d);
    return {};
}

Result<void> PathRouter::detach(uint32_t job_id) {
    auto lock = impl_->lock();
    if (!lock) return fail(lock.error());
    const std::string path = impl_->record_path(job_id);
    if (::access(path.c_str(), F_OK) != 0) return {};
    ::unlink(path.c_str());
    std::vector<std::string> done;
    if (auto r = impl_->converge_to(impl_->live_records(), false, done); !r)
        return fail("lanes: JobId=" + std::to_string(job_id) + ": path teardown: " + r.error().message);
    return {};
}

std::optional<PathJob> PathRouter::job(uint32_t job_id) const {
    auto r = decode_path_job(read_file(impl_->record_path(job_id)));
    if (!r) return std::nullopt;
    return *r;
}

std::vector<PathJob> PathRouter::jobs() const { return impl_->records(); }

Result<std::vector<std::string>> PathRouter::converge(bool dry_run, const std::function<bool(uint32_t)>& alive) {
    auto lock = impl_->lock();
    if (!lock) return fail(lock.error());
    std::vector<std::string> done;
    std::vector<PathJob> jobs;
    for (const auto& j : impl_->records()) {
        if ((alive && !alive(j.job_id)) || !impl_->has_job_state(j.job_id)) {
            done.push_back("JobId=" + std::to_string(j.job_id) + ": path record of an ended job, removed");
            if (!dry_run) ::unlink(impl_->record_path(j.job_id).c_str());
            continue;
        }
        jobs.push_back(j);
    }
    if (auto r = impl_->converge_to(jobs, dry_run, done); !r) return fail(r.error());
    return done;
}

Result<JobPath> prepare_job_path(const Config& config, const NodeConfig& node, const std::string& hostname,
                                 const std::string& class_name, LogSink log) {
    JobPath step;
    const ClassConfig* c = config.find_class(class_name);
    if (!c || !c->path || (!c->path->table && c->path->table_name.empty() && c->path->device.empty())) return step;
    auto here = path_declared_on(node, *c->path, hostname);
    if (!here) return fail(here.error());
    if (!*here) return step;
    auto marks = path_marks(config);
    auto router = marks ? PathRouter::open(node, log) : fail(marks.error());
    auto path = router ? (*router)->resolve(*c) : fail(router.error());
    if (!path) {
        if (!node.classify_failure_warns) return fail(path.error());
        step.warning =
            path.error().message + "; class " + class_name + " takes the default path (classify_failure = \"warn\")";
        return step;
    }
    step.router = std::move(*router);
    step.path = *path;
    return step;
}

Result<void> attach_job_path(JobPath& step, uint32_t job_id, uint32_t priority) {
    if (!step.router) return {};
    return step.router->attach(job_id, priority, step.path);
}

Result<void> detach_job_path(const NodeConfig& node, uint32_t job_id, LogSink log) {
    const std::string record = node.state_dir + "/paths/job_" + std::to_string(job_id);
    if (::access(record.c_str(), F_OK) != 0) return {};
    auto router = PathRouter::open(node, std::move(log));
    if (!router) return fail(router.error());
    return (*router)->detach(job_id);
}

Result<std::vector<std::string>> converge_node_paths(const NodeConfig& node, bool dry_run,
                                                     const std::function<bool(uint32_t)>& alive, LogSink log) {
    struct stat st {};
    if (::stat((node.state_dir + "/paths").c_str(), &st) != 0) return std::vector<std::string>{};
    auto router = PathRouter::open(node, std::move(log));
    if (!router) return fail(router.error());
    return (*router)->converge(dry_run, alive);
}

std::optional<PathJob> job_path(const NodeConfig& node, uint32_t job_id) {
    auto r = decode_path_job(read_file(node.state_dir + "/paths/job_" + std::to_string(job_id)));
    if (!r) return std::nullopt;
    return *r;
}

}  // namespace lanes
