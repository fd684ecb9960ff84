// SPDX-License-Identifier: GPL-2.0-or-later
// rtnetlink tc requests: messages built with libnl's nl_msg/nla helpers, sent on
// one NETLINK_ROUTE socket owned here through the shared send/ack loop
// (netlink_socket.hpp: timeout, EINTR, sequence matching, extack text).
#include "node/traffic_control.hpp"

#include "node/netlink_socket.hpp"
#include "node/nl_msg.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

namespace lanes {
namespace {

// The one netlink send/ack loop (netlink_socket.hpp) on an rtnetlink socket:
// 0 or a negative errno, the kernel's extack text in `text`.
int rt_request(NetlinkSocket& sock, nl_msg* msg, bool dump, const std::function<void(nlmsghdr*)>& on_msg,
               std::string* text) {
    auto out = sock.request(nlmsg_hdr(msg), dump, on_msg);
    if (text) *text = out.extack;
    return out.error;
}

MsgPtr tc_msg(int type, int flags, int ifindex, uint32_t handle, uint32_t parent) {
    MsgPtr msg(nlmsg_alloc_simple(type, flags));
    tcmsg t{};
    t.tcm_family = AF_UNSPEC;
    t.tcm_ifindex = ifindex;
    t.tcm_handle = handle;
    t.tcm_parent = parent;
    nlmsg_append(msg.get(), &t, sizeof t, NLMSG_ALIGNTO);
    return msg;
}

void fill_ratespec(tc_ratespec& r, uint64_t bits) {
    uint64_t bytes = bits / 8;
    r.rate = bytes >= (1ull << 32) ? ~0u : static_cast<uint32_t>(std::max<uint64_t>(bytes, 1));
    r.linklayer = TC_LINKLAYER_ETHERNET;  // the kernel computes; no rate table needed
    r.cell_align = -1;
}

bool put_htb_class(nl_msg* msg, const HtbParams& p) {
    tc_htb_opt opt{};
    fill_ratespec(opt.rate, p.rate_bits);
    fill_ratespec(opt.ceil, p.ceil_bits);
    opt.buffer = htb_buffer_ticks(p.burst, p.rate_bits);
    opt.cbuffer = htb_buffer_ticks(p.cburst, p.ceil_bits);
    opt.quantum = p.quantum;
    opt.prio = p.prio;
    if (nla_put_string(msg, TCA_KIND, "htb") < 0) return false;
    nlattr* nest = nla_nest_start(msg, TCA_OPTIONS);
    if (!nest || nla_put(msg, TCA_HTB_PARMS, sizeof opt, &opt) < 0) return false;
    if (p.rate_bits / 8 >= (1ull << 32) && nla_put_u64(msg, TCA_HTB_RATE64, p.rate_bits / 8) < 0) return false;
    if (p.ceil_bits / 8 >= (1ull << 32) && nla_put_u64(msg, TCA_HTB_CEIL64, p.ceil_bits / 8) < 0) return false;
    nla_nest_end(msg, nest);
    return true;
}

std::string describe_error(int err, const std::string& extack) {
    return netlink_error_text(NetlinkSocket::Outcome{err, extack});
}

class NetlinkTrafficControl final : public TrafficControl {
public:
    Result<void> open() { return sock_.open(NETLINK_ROUTE); }

    Result<std::vector<std::string>> devices() override {
        std::vector<std::string> out;
        struct if_nameindex* names = if_nameindex();
        if (!names) return fail(std::string("if_nameindex: ") + std::strerror(errno));
        for (auto* i = names; i->if_index != 0; ++i) out.emplace_back(i->if_name);
        if_freenameindex(names);
        return out;
    }

    Result<int> ifindex(const std::string& device) override {
        unsigned idx = if_nametoindex(device.c_str());
        if (idx == 0) return fail("NIC " + device + ": " + std::strerror(errno));
        return static_cast<int>(idx);
    }

    Result<std::string> route_device(const std::string& prefix) override {
        std::string addr = prefix.substr(0, prefix.find('/'));
        unsigned char bin[16];
        int family = addr.find(':') != std::string::npos ? AF_INET6 : AF_INET;
        if (inet_pton(family, addr.c_str(), bin) != 1)
            return fail("route_to \"" + prefix + "\": not an IPv4/IPv6 prefix");
        MsgPtr msg(nlmsg_alloc_simple(RTM_GETROUTE, 0));
        rtmsg rt{};
        rt.rtm_family = static_cast<unsigned char>(family);
        rt.rtm_dst_len = family == AF_INET ? 32 : 128;
        nlmsg_append(msg.get(), &rt, sizeof rt, NLMSG_ALIGNTO);
        nla_put(msg.get(), RTA_DST, family == AF_INET ? 4 : 16, bin);
        int oif = 0;
        std::string extack;
        int err = rt_request(
            sock_, msg.get(), false,
            [&](nlmsghdr* h) {
                nlattr* tb[RTA_MAX + 1];
                if (nlmsg_parse(h, sizeof(rtmsg), tb, RTA_MAX, nullptr) == 0 && tb[RTA_OIF])
                    oif = static_cast<int>(nla_get_u32(tb[RTA_OIF]));
            },
            &extack);
        if (err < 0) return fail("route_to \"" + prefix + "\": " + describe_error(err, extack));
        char name[IF_NAMESIZE];
        if (oif == 0 || !if_indextoname(static_cast<unsigned>(oif), name))
            return fail("route_to \"" + prefix + "\": no output device");
        return std::string(name);
    }

    std::optional<uint64_t> link_speed_bits(const std::string& device) override {
        std::string path = "/sys/class/net/" + device + "/speed";
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return std::nullopt;
        char buf[32] = {};
        ssize_t n = ::read(fd, buf, sizeof buf - 1);
        ::close(fd);
        if (n <= 0) return std::nullopt;
        long long mbit = std::strtoll(buf, nullptr, 10);
        if (mbit <= 0) return std::nullopt;
        return static_cast<uint64_t>(mbit) * 1000000ull;
    }

    Result<RootQdisc> root_qdisc(int ifindex) override {
        auto msg = tc_msg(RTM_GETQDISC, NLM_F_ECHO, ifindex, 0, TC_H_ROOT);
        RootQdisc root;
        std::string extack;
        int err = rt_request(
            sock_, msg.get(), false,
            [&](nlmsghdr* h) {
                if (h->nlmsg_type != RTM_NEWQDISC) return;
                auto* t = static_cast<tcmsg*>(nlmsg_data(h));
                if (t->tcm_ifindex != ifindex || t->tcm_parent != TC_H_ROOT) return;
                nlattr* tb[TCA_MAX + 1];
                if (nlmsg_parse(h, sizeof(tcmsg), tb, TCA_MAX, nullptr) == 0 && tb[TCA_KIND])
                    root.kind = nla_get_string(tb[TCA_KIND]);
                root.handle = t->tcm_handle;
            },
            &extack);
        // The kernel reports nothing visible (EINVAL/ENOENT) for the invisible
        // built-in roots (noop on a down device): that is "no root of anyone's".
        if (err < 0 && err != -EINVAL && err != -ENOENT)
            return fail("ifindex " + std::to_string(ifindex) + ": root qdisc: " + describe_error(err, extack));
        return root;
    }

    bool qdisc_kind_available(const std::string& kind) override {
        // Try it on the loopback of a private network namespace, in a thread of
        // our own: nothing of this namespace is touched.
        bool ok = false;
        std::thread probe([&] {
            if (::unshare(CLONE_NEWNET) != 0) return;
            NetlinkSocket s;
            if (!s.open(NETLINK_ROUTE)) return;
            auto msg = tc_msg(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, 1, tc_handle(1, 0), TC_H_ROOT);
            nla_put_string(msg.get(), TCA_KIND, kind.c_str());
            ok = rt_request(s, msg.get(), false, {}, nullptr) == 0;
        });
        probe.join();
        return ok;
    }

    Result<void> ensure_root(const EnsureRoot& op) override {
        const uint32_t handle = tc_handle(op.major, 0);
        if (!op.root_exists) {
            int flags = NLM_F_CREATE | (op.replace_foreign ? NLM_F_REPLACE : NLM_F_EXCL);
            auto msg = tc_msg(RTM_NEWQDISC, flags, op.ifindex, handle, TC_H_ROOT);
            tc_htb_glob glob{};
            glob.version = TC_HTB_PROTOVER;
            glob.rate2quantum = 10;
            glob.defcls = kDefaultMinor;
            nla_put_string(msg.get(), TCA_KIND, "htb");
            nlattr* nest = nla_nest_start(msg.get(), TCA_OPTIONS);
            nla_put(msg.get(), TCA_HTB_INIT, sizeof glob, &glob);
            nla_nest_end(msg.get(), nest);
            std::string extack;
            int err = rt_request(sock_, msg.get(), false, {}, &extack);
            if (err == -EEXIST) {
                // Someone (an earlier run) made it: fine if it is ours.
                auto root = root_qdisc(op.ifindex);
                if (!root || root->kind != "htb" || root->handle != handle)
                    return fail("NIC " + op.device + ": cannot add root htb " + handle_text(handle) + ": " +
                                describe_error(err, extack));
            } else if (err < 0) {
                return fail("NIC " + op.device + ": add root htb " + handle_text(handle) + ": " +
                            describe_error(err, extack));
            }
        }
        auto r = add_class(AddClass{op.device, op.ifindex, tc_handle(op.major, kParentMinor), handle, op.parent});
        if (!r) return r;
        return add_class(AddClass{op.device, op.ifindex, tc_handle(op.major, kDefaultMinor),
                                  tc_handle(op.major, kParentMinor), op.fallback});
    }

    Result<void> add_class(const AddClass& op) override {
        auto msg = tc_msg(RTM_NEWTCLASS, NLM_F_CREATE, op.ifindex, op.classid, op.parent);
        if (!put_htb_class(msg.get(), op.htb)) return fail("netlink message too large");
        std::string extack;
        int err = rt_request(sock_, msg.get(), false, {}, &extack);
        if (err < 0)
            return fail("NIC " + op.device + ": class " + handle_text(op.classid) + ": " + describe_error(err, extack));
        return {};
    }

    Result<void> add_leaf_qdisc(const AddLeafQdisc& op) override {
        auto msg = tc_msg(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, op.ifindex, op.handle, op.parent);
        nla_put_string(msg.get(), TCA_KIND, op.kind.c_str());
        if (op.kind == "fq_codel") {
            nlattr* nest = nla_nest_start(msg.get(), TCA_OPTIONS);
            nla_put_u32(msg.get(), TCA_FQ_CODEL_LIMIT, op.limit);
            nla_nest_end(msg.get(), nest);
        } else if (op.kind == "pfifo" || op.kind == "bfifo") {
            tc_fifo_qopt q{};
            q.limit = op.limit;
            nla_put(msg.get(), TCA_OPTIONS, sizeof q, &q);
        }
        std::string extack;
        int err = rt_request(sock_, msg.get(), false, {}, &extack);
        if (err < 0)
            return fail("NIC " + op.device + ": " + op.kind + " qdisc under class " + handle_text(op.parent) + ": " +
                        describe_error(err, extack));
        return {};
    }

    Result<void> delete_leaf_qdisc(const DeleteLeafQdisc& op) override {
        int ifindex = op.ifindex;
        if (ifindex == 0) ifindex = static_cast<int>(if_nametoindex(op.device.c_str()));
        if (ifindex == 0) return {};
        auto msg = tc_msg(RTM_DELQDISC, 0, ifindex, 0, op.parent);
        std::string extack;
        int err = rt_request(sock_, msg.get(), false, {}, &extack);
        // Nothing of ours there (HTB's own default pfifo has no handle): nothing to delete.
        if (err < 0 && err != -ENOENT && err != -ENODEV && err != -EINVAL)
            return fail("NIC " + op.device + ": delete the qdisc under class " + handle_text(op.parent) + ": " +
                        describe_error(err, extack));
        return {};
    }

    Result<void> delete_class(const DeleteClass& op) override {
        int ifindex = op.ifindex;
        if (ifindex == 0) ifindex = static_cast<int>(if_nametoindex(op.device.c_str()));
        if (ifindex == 0) return {};  // the NIC is gone, and its classes with it
        auto msg = tc_msg(RTM_DELTCLASS, 0, ifindex, op.classid, 0);
        std::string extack;
        int err = rt_request(sock_, msg.get(), false, {}, &extack);
        if (err < 0 && err != -ENOENT && err != -ENODEV)
            return fail("NIC " + op.device + ": delete class " + handle_text(op.classid) + ": " +
                        describe_error(err, extack));
        return {};
    }

    Result<void> delete_root(const DeleteRoot& op) override {
        int ifindex = op.ifindex;
        if (ifindex == 0) ifindex = static_cast<int>(if_nametoindex(op.device.c_str()));
        if (ifindex == 0) return {};
        auto root = root_qdisc(ifindex);
        if (!root) return std::unexpected(root.error());
        if (root->kind != "htb" || root->handle != tc_handle(op.major, 0)) return {};
        auto msg = tc_msg(RTM_DELQDISC, 0, ifindex, tc_handle(op.major, 0), TC_H_ROOT);
        std::string extack;
        int err = rt_request(sock_, msg.get(), false, {}, &extack);
        if (err < 0 && err != -ENOENT && err != -ENODEV)
            return fail("NIC " + op.device + ": delete root htb: " + describe_error(err, extack));
        return {};
    }

    Result<ClassCounters> class_counters(int ifindex, uint32_t classid) override {
        auto msg = tc_msg(RTM_GETTCLASS, NLM_F_ECHO, ifindex, classid, 0);
        ClassCounters c;
        bool found = false;
        std::string extack;
        int err = rt_request(
            sock_, msg.get(), false,
            [&](nlmsghdr* h) {
                if (h->nlmsg_type != RTM_NEWTCLASS) return;
                auto* t = static_cast<tcmsg*>(nlmsg_data(h));
                if (t->tcm_handle != classid) return;
                nlattr* tb[TCA_MAX + 1];
                if (nlmsg_parse(h, sizeof(tcmsg), tb, TCA_MAX, nullptr) != 0 || !tb[TCA_STATS2]) return;
                nlattr* st[TCA_STATS_MAX + 1];
                if (nla_parse_nested(st, TCA_STATS_MAX, tb[TCA_STATS2], nullptr) != 0) return;
                found = true;
                if (st[TCA_STATS_BASIC]) {
                    gnet_stats_basic b{};
                    nla_memcpy(&b, st[TCA_STATS_BASIC], sizeof b);
                    c.bytes = b.bytes;
                    c.packets = b.packets;
                }
                if (st[TCA_STATS_PKT64]) c.packets = nla_get_u64(st[TCA_STATS_PKT64]);
                if (st[TCA_STATS_QUEUE]) {
                    gnet_stats_queue q{};
                    nla_memcpy(&q, st[TCA_STATS_QUEUE], sizeof q);
                    c.drops = q.drops;
                    c.overlimits = q.overlimits;
                    c.backlog = q.backlog;
                }
            },
            &extack);
        if (err < 0)
            return fail("ifindex " + std::to_string(ifindex) + ": class " + handle_text(classid) + ": " +
                        describe_error(err, extack));
        if (!found)
            return fail("ifindex " + std::to_string(ifindex) + ": class " + handle_text(classid) +
                        ": no statistics reported");
        return c;
    }

    Result<std::vector<uint32_t>> classes(int ifindex, uint16_t major) override {
        auto msg = tc_msg(RTM_GETTCLASS, 0, ifindex, 0, 0);
        std::vector<uint32_t> out;
        std::string extack;
        int err = rt_request(
            sock_, msg.get(), true,
            [&](nlmsghdr* h) {
                if (h->nlmsg_type != RTM_NEWTCLASS) return;
                auto* t = static_cast<tcmsg*>(nlmsg_data(h));
                if (t->tcm_ifindex == ifindex && (t->tcm_handle >> 16) == major) out.push_back(t->tcm_handle);
            },
            &extack);
        if (err < 0) return fail("ifindex " + std::to_string(ifindex) + ": classes: " + describe_error(err, extack));
        std::sort(out.begin(), out.end());
        return out;
    }

    Result<GsoSize> gso_size(int ifindex) override {
        MsgPtr msg(nlmsg_alloc_simple(RTM_GETLINK, 0));
        ifinfomsg ifi{};
        ifi.ifi_family = AF_UNSPEC;
        ifi.ifi_index = ifindex;
        nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO);
        nla_put_u32(msg.get(), IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
        GsoSize size;
        bool found = false;
        std::string extack;
        int err = rt_request(
            sock_, msg.get(), false,
            [&](nlmsghdr* h) {
                if (h->nlmsg_type != RTM_NEWLINK) return;
                nlattr* tb[kIflaMax + 1];
                if (nlmsg_parse(h, sizeof(ifinfomsg), tb, kIflaMax, nullptr) != 0) return;
                if (tb[IFLA_GSO_MAX_SIZE]) {
                    size.max = nla_get_u32(tb[IFLA_GSO_MAX_SIZE]);
                    found = true;
                }
                if (tb[kIflaGsoIpv4MaxSize]) size.ipv4_max = nla_get_u32(tb[kIflaGsoIpv4MaxSize]);
            },
            &extack);
        if (err < 0) return fail("ifindex " + std::to_string(ifindex) + ": link: " + describe_error(err, extack));
        if (!found) return fail("ifindex " + std::to_string(ifindex) + ": the kernel reports no gso_max_size");
        return size;
    }

    Result<void> set_gso_size(int ifindex, const GsoSize& size) override {
        MsgPtr msg(nlmsg_alloc_simple(RTM_NEWLINK, 0));
        ifinfomsg ifi{};
        ifi.ifi_family = AF_UNSPEC;
        ifi.ifi_index = ifindex;
        nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO);
        nla_put_u32(msg.get(), IFLA_GSO_MAX_SIZE, size.max);
        if (size.ipv4_max) nla_put_u32(msg.get(), kIflaGsoIpv4MaxSize, size.ipv4_max);
        std::string extack;
        int err = rt_request(sock_, msg.get(), false, {}, &extack);
        if (err < 0)
            return fail("ifindex " + std::to_string(ifindex) + ": set gso_max_size " + std::to_string(size.max) + ": " +
                        describe_error(err, extack));
        return {};
    }

    std::optional<bool> link_down(const std::string& device) override {
        unsigned idx = if_nametoindex(device.c_str());
        if (idx == 0) return std::nullopt;
        MsgPtr msg(nlmsg_alloc_simple(RTM_GETLINK, 0));
        ifinfomsg ifi{};
        ifi.ifi_family = AF_UNSPEC;
        ifi.ifi_index = static_cast<int>(idx);
        nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO);
        nla_put_u32(msg.get(), IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
        std::optional<bool> down;
        int err = rt_request(
            sock_, msg.get(), false,
            [&](nlmsghdr* h) {
                if (h->nlmsg_type != RTM_NEWLINK) return;
                auto* info = static_cast<ifinfomsg*>(nlmsg_data(h));
                nlattr* tb[kIflaMax + 1];
                if (nlmsg_parse(h, sizeof(ifinfomsg), tb, kIflaMax, nullptr) != 0) return;
                const bool admin_down = (info->ifi_flags & IFF_UP) == 0;
                const bool oper_down = tb[IFLA_OPERSTATE] && nla_get_u8(tb[IFLA_OPERSTATE]) == kIfOperDown;
                down = admin_down || oper_down;
            },
            nullptr);
        if (err < 0) return std::nullopt;
        return down;
    }

    Result<TcSnapshot> snapshot(int ifindex) override {
        TcSnapshot snap;
        auto root = root_qdisc(ifindex);
        if (!root) return std::unexpected(root.error());
        snap.root = *root;
        // Qdiscs: the kernel dumps every device's; keep this one's, not the root.
        auto qmsg = tc_msg(RTM_GETQDISC, 0, ifindex, 0, 0);
        std::string extack;
        int err = rt_request(
            sock_, qmsg.get(), true,
            [&](nlmsghdr* h) {
                if (h->nlmsg_type != RTM_NEWQDISC) return;
                auto* t = static_cast<tcmsg*>(nlmsg_data(h));
                if (t->tcm_ifindex != ifindex || t->tcm_parent == TC_H_ROOT) return;
                ObservedQdisc q;
                q.handle = t->tcm_handle;
                q.parent = t->tcm_parent;
                nlattr* tb[TCA_MAX + 1];
                if (nlmsg_parse(h, sizeof(tcmsg), tb, TCA_MAX, nullptr) == 0 && tb[TCA_KIND])
                    q.kind = nla_get_string(tb[TCA_KIND]);
                snap.qdiscs.push_back(std::move(q));
            },
            &extack);
        if (err < 0) return fail("ifindex " + std::to_string(ifindex) + ": qdiscs: " + describe_error(err, extack));
        // Classes of this device (the kernel filters a class dump by tcm_ifindex).
        auto cmsg = tc_msg(RTM_GETTCLASS, 0, ifindex, 0, 0);
        err = rt_request(
            sock_, cmsg.get(), true,
            [&](nlmsghdr* h) {
                if (h->nlmsg_type != RTM_NEWTCLASS) return;
                auto* t = static_cast<tcmsg*>(nlmsg_data(h));
                if (t->tcm_ifindex != ifindex) return;
                ObservedClass c;
                c.classid = t->tcm_handle;
                c.parent = t->tcm_parent;
                nlattr* tb[TCA_MAX + 1];
                if (nlmsg_parse(h, sizeof(tcmsg), tb, TCA_MAX, nullptr) != 0) return;
                if (tb[TCA_KIND]) c.kind = nla_get_string(tb[TCA_KIND]);
                if (c.kind == "htb" && tb[TCA_OPTIONS]) {
                    nlattr* ob[TCA_HTB_MAX + 1];
                    if (nla_parse_nested(ob, TCA_HTB_MAX, tb[TCA_OPTIONS], nullptr) == 0) {
                        if (ob[TCA_HTB_PARMS] && nla_len(ob[TCA_HTB_PARMS]) >= static_cast<int>(sizeof(tc_htb_opt))) {
                            tc_htb_opt opt{};
                            nla_memcpy(&opt, ob[TCA_HTB_PARMS], sizeof opt);
                            c.rate_bits = uint64_t{opt.rate.rate} * 8;
                            c.ceil_bits = uint64_t{opt.ceil.rate} * 8;
                            c.prio = opt.prio;
                            c.quantum = opt.quantum;
                        }
                        if (ob[TCA_HTB_RATE64]) c.rate_bits = nla_get_u64(ob[TCA_HTB_RATE64]) * 8;
                        if (ob[TCA_HTB_CEIL64]) c.ceil_bits = nla_get_u64(ob[TCA_HTB_CEIL64]) * 8;
                    }
                }
                snap.classes.push_back(std::move(c));
            },
            &extack);
        if (err < 0) return fail("ifindex " + std::to_string(ifindex) + ": classes: " + describe_error(err, extack));
        return snap;
    }

private:
    // Linux 6.3 added IFLA_GSO_IPV4_MAX_SIZE (63); Debian 12's headers predate it.
    static constexpr int kIflaGsoIpv4MaxSize = 63;
    static constexpr int kIflaMax = 70;
    static constexpr uint8_t kIfOperDown = 2;  // IF_OPER_DOWN (linux/if.h clashes with net/if.h)
    NetlinkSocket sock_;
};

}  // namespace

uint32_t htb_buffer_ticks(uint32_t bytes, uint64_t rate_bits) {
    if (rate_bits == 0) return ~0u;
    // ns = bytes * 8e9 / rate; one psched tick is 64 ns.
    unsigned __int128 ns = static_cast<unsigned __int128>(bytes) * 8'000'000'000ull / rate_bits;
    unsigned __int128 ticks = ns >> 6;
    return ticks > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(std::max<unsigned __int128>(ticks, 1));
}

std::vector<uint8_t> htb_class_message(const AddClass& op) {
    auto msg = tc_msg(RTM_NEWTCLASS, NLM_F_CREATE, op.ifindex, op.classid, op.parent);
    if (!put_htb_class(msg.get(), op.htb)) return {};
    nlmsghdr* h = nlmsg_hdr(msg.get());
    auto* p = reinterpret_cast<const uint8_t*>(h);
    return std::vector<uint8_t>(p, p + h->nlmsg_len);
}

Result<std::unique_ptr<TrafficControl>> make_netlink_traffic_control() {
    auto tc = std::make_unique<NetlinkTrafficControl>();
    auto r = tc->open();
    if (!r) return std::unexpected(r.error());
    return std::unique_ptr<TrafficControl>(std::move(tc));
}

const ObservedClass* find_class(const TcSnapshot& tc, uint32_t classid) {
    for (const auto& c : tc.classes)
        if (c.classid == classid) return &c;
    return nullptr;
}

const ObservedQdisc* find_leaf(const TcSnapshot& tc, uint32_t parent) {
    for (const auto& q : tc.qdiscs)
        if (q.parent == parent) return &q;
    return nullptr;
}

bool same_htb(const ObservedClass& seen, const HtbParams& want) {
    return seen.kind == "htb" && seen.rate_bits / 8 == want.rate_bits / 8 && seen.ceil_bits / 8 == want.ceil_bits / 8 &&
           seen.prio == want.prio && seen.quantum == want.quantum;
}

}  // namespace lanes
