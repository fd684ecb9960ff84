// SPDX-License-Identifier: GPL-2.0-or-later
// See kernel_events.hpp.
#include "agent/kernel_events.hpp"

#include "node/ingress_plan.hpp"
#include "node/path_plan.hpp"

#include <linux/fib_rules.h>
#include <linux/if_link.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lanes::agent {

namespace {

// The first attribute of type `type` after a payload of `header` bytes, or null.
const nlattr* find_attr(const nlmsghdr* h, std::size_t header, uint16_t type) {
    const std::size_t start = NLMSG_HDRLEN + NLMSG_ALIGN(header);
    if (h->nlmsg_len < start) return nullptr;
    const char* p = reinterpret_cast<const char*>(h) + start;
    std::size_t rem = h->nlmsg_len - start;
    while (rem >= sizeof(nlattr)) {
        const auto* a = reinterpret_cast<const nlattr*>(p);
        if (a->nla_len < sizeof(nlattr) || a->nla_len > rem) return nullptr;
        if ((a->nla_type & NLA_TYPE_MASK) == type) return a;
        const std::size_t step = NLA_ALIGN(a->nla_len);
        if (step >= rem) break;
        p += step;
        rem -= step;
    }
    return nullptr;
}

uint32_t attr_u32(const nlattr* a) {
    uint32_t v = 0;
    if (a->nla_len >= NLA_HDRLEN + sizeof v) std::memcpy(&v, reinterpret_cast<const char*>(a) + NLA_HDRLEN, sizeof v);
    return v;
}

std::string attr_string(const nlattr* a) {
    const char* s = reinterpret_cast<const char*>(a) + NLA_HDRLEN;
    std::size_t n = a->nla_len - NLA_HDRLEN;
    return std::string(s, strnlen(s, n));
}

int open_subscribed(int protocol, unsigned group, std::string& error) {
    int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
    if (fd < 0) {
        error = std::string("socket(AF_NETLINK): ") + std::strerror(errno);
        return -1;
    }
    int size = 1 << 20;  // a flush of thousands of elements is one burst
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    sockaddr_nl addr{};
    addr.nl_family = AF_NETLINK;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) != 0) {
        error = std::string("netlink group ") + std::to_string(group) + ": " + std::strerror(errno);
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

KernelEvent classify_route_message(const nlmsghdr* h, const WatchedDevices& watched) {
    if (h->nlmsg_pid && watched.own_portids.count(h->nlmsg_pid)) return KernelEvent::Unrelated;
    switch (h->nlmsg_type) {
        case RTM_NEWLINK:
        case RTM_DELLINK: {
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof(ifinfomsg))) return KernelEvent::Unrelated;
            const auto* ifi = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
            if (watched.ifindexes.count(ifi->ifi_index)) return KernelEvent::Link;
            if (const nlattr* name = find_attr(h, sizeof(ifinfomsg), IFLA_IFNAME);
                name && watched.names.count(attr_string(name)))
                return KernelEvent::Link;
            return KernelEvent::Unrelated;
        }
        case RTM_NEWQDISC:
        case RTM_DELQDISC:
        case RTM_NEWTCLASS:
        case RTM_DELTCLASS:
        case RTM_NEWTFILTER:
        case RTM_DELTFILTER: {
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof(tcmsg))) return KernelEvent::Unrelated;
            const auto* t = static_cast<const tcmsg*>(NLMSG_DATA(h));
            return watched.ifindexes.count(t->tcm_ifindex) ? KernelEvent::Tc : KernelEvent::Unrelated;
        }
        case RTM_NEWRULE:
        case RTM_DELRULE: {
            // A path's `ip rule` (path_plan.hpp): Lanes' preference, IPv4 or IPv6.
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof(fib_rule_hdr))) return KernelEvent::Unrelated;
            const nlattr* pref = find_attr(h, sizeof(fib_rule_hdr), FRA_PRIORITY);
            return pref && attr_u32(pref) == kPathRulePriority ? KernelEvent::Path : KernelEvent::Unrelated;
        }
        case RTM_NEWROUTE:
        case RTM_DELROUTE: {
            // A route in one of Lanes' own path tables (numbered like the marks).
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof(rtmsg))) return KernelEvent::Unrelated;
            const auto* rt = static_cast<const rtmsg*>(NLMSG_DATA(h));
            uint32_t table = rt->rtm_table;
            if (const nlattr* t = find_attr(h, sizeof(rtmsg), RTA_TABLE)) table = attr_u32(t);
            return (table & kPathMarkMask) == kPathMarkBase ? KernelEvent::Path : KernelEvent::Unrelated;
        }
        default: return KernelEvent::Unrelated;
    }
}

KernelEvent classify_nft_message(const nlmsghdr* h, const std::string& table, const std::set<uint32_t>& own) {
    if (h->nlmsg_pid && own.count(h->nlmsg_pid)) return KernelEvent::Unrelated;
    if ((h->nlmsg_type >> 8) != NFNL_SUBSYS_NFTABLES) return KernelEvent::Unrelated;
    const int msg = h->nlmsg_type & 0xff;
    if (msg == NFT_MSG_NEWGEN) return KernelEvent::Unrelated;
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nfgenmsg))) return KernelEvent::Unrelated;
    const auto* g = static_cast<const nfgenmsg*>(NLMSG_DATA(h));
    // Ours: inet `table`, and the ingress caps' netdev table (ingress_plan.hpp).
    if (g->nfgen_family != NFPROTO_INET && g->nfgen_family != NFPROTO_NETDEV) return KernelEvent::Unrelated;
    // NFTA_TABLE_NAME, NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, NFTA_SET_TABLE,
    // NFTA_SET_ELEM_LIST_TABLE, NFTA_OBJ_TABLE, NFTA_FLOWTABLE_TABLE: all 1.
    const nlattr* name = find_attr(h, sizeof(nfgenmsg), 1);
    if (!name) return KernelEvent::Unrelated;
    if (g->nfgen_family == NFPROTO_NETDEV)
        return attr_string(name) == kIngressTable ? KernelEvent::Nft : KernelEvent::Unrelated;
    const std::string named = attr_string(name);
    if (named == kPathNftTable) return KernelEvent::Path;  // the paths' marks (path_plan.hpp)
    return named == table ? KernelEvent::Nft : KernelEvent::Unrelated;
}

std::set<uint32_t> own_netlink_portids() {
    std::set<unsigned long> inodes;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (dirent* e = ::readdir(d)) {
            char link[64];
            const std::string path = std::string("/proc/self/fd/") + e->d_name;
            ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
            if (n <= 0) continue;
            link[n] = 0;
            unsigned long inode = 0;
            if (std::sscanf(link, "socket:[%lu]", &inode) == 1) inodes.insert(inode);
        }
        ::closedir(d);
    }
    std::set<uint32_t> out;
    std::ifstream in("/proc/self/net/netlink");
    std::string line;
    std::getline(in, line);  // header: sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string sk, eth, groups, rmem, wmem, dump, locks, drops;
        uint32_t pid = 0;
        unsigned long inode = 0;
        if (fields >> sk >> eth >> pid >> groups >> rmem >> wmem >> dump >> locks >> drops >> inode && pid &&
            inodes.count(inode))
            out.insert(pid);
    }
    return out;
}

KernelEvents::~KernelEvents() {
    if (route_fd_ >= 0) ::close(route_fd_);
    if (nft_fd_ >= 0) ::close(nft_fd_);
}

Result<void> KernelEvents::open() {
    std::string error;
    route_fd_ = open_subscribed(NETLINK_ROUTE, RTNLGRP_LINK, error);
    if (route_fd_ < 0) return fail("rtnetlink: " + error);
    const std::pair<unsigned, const char*> groups[] = {{RTNLGRP_TC, "RTNLGRP_TC"},
                                                       {RTNLGRP_IPV4_RULE, "RTNLGRP_IPV4_RULE"},
                                                       {RTNLGRP_IPV6_RULE, "RTNLGRP_IPV6_RULE"},
                                                       {RTNLGRP_IPV4_ROUTE, "RTNLGRP_IPV4_ROUTE"},
                                                       {RTNLGRP_IPV6_ROUTE, "RTNLGRP_IPV6_ROUTE"}};
    for (const auto& [group, name] : groups)
        if (::setsockopt(route_fd_, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) != 0)
            return fail(std::string("rtnetlink: netlink group ") + name + ": " + std::strerror(errno));
    nft_fd_ = open_subscribed(NETLINK_NETFILTER, NFNLGRP_NFTABLES, error);
    if (nft_fd_ < 0) return fail("nfnetlink (NFNLGRP_NFTABLES): " + error);
    return {};
}

KernelEvents::Drained KernelEvents::drain(int fd, const WatchedDevices& watched, const std::string& nft_table) {
    Drained out;
    while (true) {
        ssize_t n = ::recv(fd, buf_, sizeof buf_, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == ENOBUFS) {
                out.overrun = true;
                continue;
            }
            break;  // EAGAIN: all read
        }
        if (n == 0) break;
        int len = static_cast<int>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf_); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            KernelEvent e = fd == nft_fd_ ? classify_nft_message(h, nft_table, watched.own_portids)
                                          : classify_route_message(h, watched);
            switch (e) {
                case KernelEvent::Link: ++out.link; break;
                case KernelEvent::Tc: ++out.tc; break;
                case KernelEvent::Nft: ++out.nft; break;
                case KernelEvent::Path: ++out.path; break;
                case KernelEvent::Unrelated: ++out.unrelated; break;
            }
        }
    }
    return out;
}

}  // namespace lanes::agent
