// SPDX-License-Identifier: GPL-2.0-or-later
// One netlink socket for both kernel interfaces Lanes talks to: rtnetlink (tc,
// links, routes; traffic_control.cpp) and nfnetlink (nf_tables; packet_marker.cpp).
//
// One send/ack loop with the same rules everywhere:
//   - every receive has a timeout (a lost reply must not hang a prolog or slurmd's
//     start): past it the request fails with ETIMEDOUT, named as such;
//   - EINTR is retried (send and receive), never reported;
//   - replies to earlier requests (a reply that came after its timeout) are skipped
//     by sequence number;
//   - the kernel's extended ack text (NLMSGERR_ATTR_MSG) is kept with the error of
//     the first failing message, and error_text() puts both in one line;
//   - a 64 KiB receive buffer (a dump part is at most 32 KiB) and a 1 MiB socket
//     buffer, so a transaction of thousands of messages cannot overflow it.
//
// Messages are built by the callers with libnl-3's nl_msg/nla helpers (no
// libnl-route objects: the tc messages are iproute2-style, see traffic_control.hpp).
#pragma once

#include <linux/netlink.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace lanes {

inline constexpr std::chrono::milliseconds kNetlinkTimeout{5000};

class NetlinkSocket {
public:
    NetlinkSocket() = default;
    ~NetlinkSocket();
    NetlinkSocket(NetlinkSocket&& other) noexcept;
    NetlinkSocket& operator=(NetlinkSocket&& other) noexcept;
    NetlinkSocket(const NetlinkSocket&) = delete;
    NetlinkSocket& operator=(const NetlinkSocket&) = delete;

    // NETLINK_ROUTE or NETLINK_NETFILTER; `what` names the socket in messages.
    Result<void> open(int protocol, std::chrono::milliseconds timeout = kNetlinkTimeout);
    bool is_open() const { return fd_ >= 0; }
    int fd() const { return fd_; }

    // A fresh sequence number (never 0).
    uint32_t next_seq();

    // The outcome of one exchange: 0 or a negative errno (-ETIMEDOUT when the
    // kernel did not answer in time), and the kernel's text for the first error.
    struct Outcome {
        int error = 0;
        std::string extack;
        explicit operator bool() const { return error == 0; }
    };

    // Send `bytes` (one message or a whole nfnetlink batch, sequence numbers set
    // by the caller in [first_seq, last_seq]) in one sendto, then read replies until
    // the one that ends the exchange: the ack (NLMSG_ERROR) of `last_seq`, or
    // NLMSG_DONE of `last_seq` when `dump`. Every other message with a sequence
    // number in the range goes to `on_msg`. The first error wins.
    Outcome exchange(const void* bytes, std::size_t len, uint32_t first_seq, uint32_t last_seq, bool dump,
                     const std::function<void(nlmsghdr*)>& on_msg = {});

    // One request message (its header is completed here: sequence number, flags
    // NLM_F_REQUEST plus NLM_F_ACK, or NLM_F_DUMP when `dump`).
    Outcome request(nlmsghdr* msg, bool dump, const std::function<void(nlmsghdr*)>& on_msg = {});

private:
    int fd_ = -1;
    uint32_t seq_ = 0;
    std::vector<char> buf_;
};

// "No such file or directory (the kernel's text)", "no reply from the kernel
// within 5 s" for ETIMEDOUT.
std::string netlink_error_text(const NetlinkSocket::Outcome& outcome);

// The extended ack text of an NLMSG_ERROR message, if any (exposed for tests).
std::string netlink_extack_text(const nlmsghdr* h);

}  // namespace lanes
