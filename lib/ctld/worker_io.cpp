// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/worker_io.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace lanes::wire {

namespace {

// Waits until fd is ready for `events` or the deadline passes.
IoStatus wait_for(int fd, short events, std::optional<std::chrono::steady_clock::time_point> deadline) {
    while (true) {
        struct pollfd p {
            fd, events, 0
        };
        struct timespec ts {};
        struct timespec* tsp = nullptr;
        if (deadline) {
            auto left = *deadline - std::chrono::steady_clock::now();
            if (left <= std::chrono::steady_clock::duration::zero()) return IoStatus::Timeout;
            auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
            ts.tv_sec = static_cast<time_t>(ns / 1000000000);
            ts.tv_nsec = static_cast<long>(ns % 1000000000);
            tsp = &ts;
        }
        int n = ::ppoll(&p, 1, tsp, nullptr);
        if (n < 0) {
            if (errno == EINTR) continue;
            return IoStatus::Closed;
        }
        if (n == 0) return IoStatus::Timeout;
        return IoStatus::Ok;  // readable, writable, or hung up (the read/send says which)
    }
}

IoStatus read_exact(int fd, char* buf, size_t n, std::optional<std::chrono::steady_clock::time_point> deadline) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = ::read(fd, buf + got, n - got);
        if (r > 0) {
            got += static_cast<size_t>(r);
            continue;
        }
        if (r == 0) return IoStatus::Closed;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return IoStatus::Closed;
        if (IoStatus s = wait_for(fd, POLLIN, deadline); s != IoStatus::Ok) return s;
    }
    return IoStatus::Ok;
}

}  // namespace

IoStatus write_frame(int fd, std::string_view frame, std::optional<std::chrono::steady_clock::time_point> deadline) {
    size_t sent = 0;
    while (sent < frame.size()) {
        ssize_t r = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
        if (r > 0) {
            sent += static_cast<size_t>(r);
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (IoStatus s = wait_for(fd, POLLOUT, deadline); s != IoStatus::Ok) return s;
            continue;
        }
        return IoStatus::Closed;
    }
    return IoStatus::Ok;
}

IoStatus wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
    return wait_for(fd, POLLIN, deadline);
}

IoStatus read_frame(int fd, Frame& out, std::optional<std::chrono::steady_clock::time_point> deadline,
                    std::string* error) {
    char header[kHeaderBytes];
    if (IoStatus s = read_exact(fd, header, sizeof header, deadline); s != IoStatus::Ok) return s;
    auto h = decode_header(std::string_view(header, sizeof header));
    if (!h) {
        if (error) *error = h.error().message;
        return IoStatus::Garbage;
    }
    out.type = h->type;
    out.payload.resize(h->payload_bytes);
    if (h->payload_bytes == 0) return IoStatus::Ok;
    return read_exact(fd, out.payload.data(), out.payload.size(), deadline);
}

}  // namespace lanes::wire
