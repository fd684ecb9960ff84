// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/netlink_socket.hpp"

#include <netlink/attr.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lanes {

NetlinkSocket::~NetlinkSocket() {
    if (fd_ >= 0) ::close(fd_);
}

NetlinkSocket::NetlinkSocket(NetlinkSocket&& other) noexcept
    : fd_(other.fd_), seq_(other.seq_), buf_(std::move(other.buf_)) {
    other.fd_ = -1;
}

NetlinkSocket& NetlinkSocket::operator=(NetlinkSocket&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.fd_;
        seq_ = other.seq_;
        buf_ = std::move(other.buf_);
        other.fd_ = -1;
    }
    return *this;
}

Result<void> NetlinkSocket::open(int protocol, std::chrono::milliseconds timeout) {
    const char* what = protocol == NETLINK_NETFILTER ? "nfnetlink"
                       : protocol == NETLINK_ROUTE   ? "rtnetlink"
                                                     : "netlink";
    if (fd_ >= 0) ::close(fd_);
    fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
    if (fd_ < 0) return fail(std::string(what) + " socket: " + std::strerror(errno));
    sockaddr_nl sa{};
    sa.nl_family = AF_NETLINK;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        int err = errno;
        ::close(fd_);
        fd_ = -1;
        return fail(std::string(what) + " bind: " + std::strerror(err));
    }
    int one = 1;
    ::setsockopt(fd_, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
    ::setsockopt(fd_, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
    int size = 1 << 20;
    if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    buf_.assign(64 * 1024, 0);
    return {};
}

uint32_t NetlinkSocket::next_seq() {
    if (++seq_ == 0) ++seq_;
    return seq_;
}

NetlinkSocket::Outcome NetlinkSocket::exchange(const void* bytes, std::size_t len, uint32_t first_seq,
                                               uint32_t last_seq, bool dump,
                                               const std::function<void(nlmsghdr*)>& on_msg) {
    Outcome out;
    if (fd_ < 0) {
        out.error = -EBADF;
        return out;
    }
    // Sequence numbers handed out by the caller count as used.
    if (last_seq > seq_) seq_ = last_seq;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    for (;;) {
        if (::sendto(fd_, bytes, len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) >= 0) break;
        if (errno == EINTR) continue;
        out.error = (errno == EAGAIN || errno == EWOULDBLOCK) ? -ETIMEDOUT : -errno;
        return out;
    }
    auto ours = [&](uint32_t seq) {
        return first_seq <= last_seq ? seq >= first_seq && seq <= last_seq : seq >= first_seq || seq <= last_seq;
    };
    for (;;) {
        ssize_t n = ::recv(fd_, buf_.data(), buf_.size(), 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (out.error == 0) out.error = (errno == EAGAIN || errno == EWOULDBLOCK) ? -ETIMEDOUT : -errno;
            return out;
        }
        int left = static_cast<int>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf_.data()); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
            if (!ours(h->nlmsg_seq)) continue;  // a late reply to an earlier exchange
            if (h->nlmsg_type == NLMSG_DONE) {
                if (h->nlmsg_seq == last_seq) return out;
                continue;
            }
            if (h->nlmsg_type == NLMSG_ERROR) {
                auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(h));
                if (e->error != 0 && out.error == 0) {
                    out.error = e->error;
                    out.extack = netlink_extack_text(h);
                }
                // A dump ends with NLMSG_DONE, unless it failed.
                if (h->nlmsg_seq == last_seq && (!dump || e->error != 0)) return out;
                continue;
            }
            if (on_msg) on_msg(h);
        }
    }
}

NetlinkSocket::Outcome NetlinkSocket::request(nlmsghdr* msg, bool dump, const std::function<void(nlmsghdr*)>& on_msg) {
    msg->nlmsg_seq = next_seq();
    msg->nlmsg_pid = 0;
    msg->nlmsg_flags |= NLM_F_REQUEST | (dump ? NLM_F_DUMP : NLM_F_ACK);
    return exchange(msg, msg->nlmsg_len, msg->nlmsg_seq, msg->nlmsg_seq, dump, on_msg);
}

std::string netlink_extack_text(const nlmsghdr* h) {
    if (h->nlmsg_type != NLMSG_ERROR || !(h->nlmsg_flags & NLM_F_ACK_TLVS)) return {};
    auto* err = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
    std::size_t offset = NLMSG_HDRLEN + sizeof(nlmsgerr);
    if (!(h->nlmsg_flags & NLM_F_CAPPED)) offset += err->msg.nlmsg_len - NLMSG_HDRLEN;
    if (NLMSG_ALIGN(offset) >= h->nlmsg_len) return {};
    auto* attr = reinterpret_cast<nlattr*>(const_cast<char*>(reinterpret_cast<const char*>(h)) + NLMSG_ALIGN(offset));
    int rem = static_cast<int>(h->nlmsg_len) - static_cast<int>(NLMSG_ALIGN(offset));
    for (; nla_ok(attr, rem); attr = nla_next(attr, &rem))
        if (nla_type(attr) == NLMSGERR_ATTR_MSG) return nla_get_string(attr);
    return {};
}

std::string netlink_error_text(const NetlinkSocket::Outcome& outcome) {
    if (outcome.error == -ETIMEDOUT) return "no reply from the kernel within the netlink timeout";
    std::string s = std::strerror(-outcome.error);
    if (!outcome.extack.empty()) s += " (" + outcome.extack + ")";
    return s;
}

}  // namespace lanes
