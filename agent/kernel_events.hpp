// SPDX-License-Identifier: GPL-2.0-or-later
// What the agent hears from the kernel: netlink multicast notifications on two
// sockets, rtnetlink (RTNLGRP_LINK: links new, deleted, up, down, renamed;
// RTNLGRP_TC: qdiscs, classes and filters; RTNLGRP_IPV4/IPV6_RULE and _ROUTE:
// the `ip rule`s and routes of the paths per class) and nfnetlink
// (NFNLGRP_NFTABLES: tables, chains, rules, sets and elements). libnl offers the same memberships
// (nl_socket_add_memberships) over the same kind of socket; the agent needs no
// object cache, only the message headers, so both are plain non-blocking
// netlink sockets here.
//
// A notification never carries the answer, only "look again": the agent
// converges from the desired state whatever the event said. The filters below
// only keep the obviously unrelated out (another NIC's qdiscs, another table's
// rules, nf_tables' per-transaction NEWGEN), so a busy node's traffic of
// unrelated changes costs a header read each. A receive buffer overrun
// (ENOBUFS: the kernel dropped notifications) counts as an event.
#pragma once

#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "core/result.hpp"

namespace lanes::agent {

// The NICs whose notifications matter: by index (tc and link messages) and by
// name (a link that appears, or is renamed, with a managed name); and the
// netlink port ids of this process's own sockets, whose notifications are the
// agent's own doing: its repairs, and its reads (a kernel before 6.x sends the
// answer to a non-dump RTM_GETQDISC/RTM_GETTCLASS to every RTNLGRP_TC listener
// too, so every converge would otherwise wake the next one).
struct WatchedDevices {
    std::set<int> ifindexes;
    std::set<std::string> names;
    std::set<uint32_t> own_portids;
};

// The port ids of this process's netlink sockets (/proc/self/fd against
// /proc/self/net/netlink, in this network namespace).
std::set<uint32_t> own_netlink_portids();

enum class KernelEvent { Unrelated, Link, Tc, Nft, Path };

// One rtnetlink notification: Link (RTM_NEWLINK/RTM_DELLINK of a watched index
// or name), Tc (RTM_*QDISC/TCLASS/TFILTER on a watched index), Path (a rule at
// Lanes' preference kPathRulePriority, a route in one of Lanes' own path tables,
// path_plan.hpp), else Unrelated.
KernelEvent classify_route_message(const nlmsghdr* h, const WatchedDevices& watched);
// One nfnetlink notification: Nft when it is an nf_tables message about `table`
// in the inet family (every nf_tables message names its table in attribute 1),
// Path when it is about the paths' inet lanes_paths, else Unrelated (NEWGEN, other tables, other subsystems, our own
// sockets').
KernelEvent classify_nft_message(const nlmsghdr* h, const std::string& table, const std::set<uint32_t>& own_portids);

// The two subscribed sockets.
class KernelEvents {
public:
    KernelEvents() = default;
    ~KernelEvents();
    KernelEvents(const KernelEvents&) = delete;
    KernelEvents& operator=(const KernelEvents&) = delete;

    // Opens and subscribes both sockets (needs no privilege to listen; fails with
    // the socket call and errno).
    Result<void> open();
    int route_fd() const { return route_fd_; }
    int nft_fd() const { return nft_fd_; }

    struct Drained {
        std::size_t link = 0, tc = 0, nft = 0, path = 0, unrelated = 0;
        bool overrun = false;  // ENOBUFS: notifications were lost
        bool any() const { return link || tc || nft || path || overrun; }
    };
    // Reads every notification waiting on `fd` (non-blocking) and classifies it.
    Drained drain(int fd, const WatchedDevices& watched, const std::string& nft_table);

private:
    int route_fd_ = -1;
    int nft_fd_ = -1;
    char buf_[65536];
};

}  // namespace lanes::agent
