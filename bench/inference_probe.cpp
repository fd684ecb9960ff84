// SPDX-License-Identifier: GPL-2.0-or-later
// inference_probe: a stand-in for an inference service and its clients.
//
//   inference_probe serve --listen ADDR:PORT [--reply-bytes 1024] [--dscp NAME]
//                         [--congestion ALGO] [--exit-after SECONDS]
//   inference_probe load  --connect ADDR:PORT --rate 200 --duration 10
//                         [--request-bytes 256] [--reply-bytes N] [--connections 4]
//                         [--dscp EF] [--congestion ALGO] [--timeout-ms 1000] [--json]
//                         [--metrics ADDR:PORT] [--samples FILE]
//
// serve: a single-threaded epoll request/response server. Each request names its
// sequence number and length; the reply is --reply-bytes long (or what the
// request asks for), in order on the same connection, TCP_NODELAY.
//
// load: open loop. Request i is due at start + i/rate, whatever happened to the
// earlier ones; requests go round-robin over the connections and are pipelined.
// Latency runs from the due time to the last byte of the reply (see
// bench/latency_stats.hpp). Sends stop at --duration; everything still open at
// duration + 2 s is a timeout and the program exits. --dscp marks the socket
// (IP_TOS / IPV6_TCLASS) before connecting. --congestion picks the sockets' TCP
// congestion control (e.g. cubic, Linux's default, where a machine's default is
// something else: BBR's pacing delays small replies on a connection it thinks
// is slow).
//
// --metrics serves the latency histogram in Prometheus' text format over HTTP
// (GET any path) from the same event loop, for a Prometheus server to scrape
// while the load runs (lanes_probe_latency_seconds, lanes_probe_requests_total,
// lanes_probe_offered_requests_per_second: the schedule's --rate).
//
// --samples FILE writes every latency (ms, one a line, timeouts as the time
// they waited) for a bootstrap confidence interval of the p99 (fabric_scale.sh).
//
// Exit: 0 when at least one reply came back, 1 on a usage or setup error, 3 when
// no request succeeded.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/latency_stats.hpp"
#include "core/lanes_toml.hpp"

namespace lanes::bench {
namespace {

constexpr uint32_t kRequestMagic = 0x4c4e5031;  // "LNP1"
constexpr uint32_t kReplyMagic = 0x4c4e5231;    // "LNR1"
constexpr size_t kHeaderBytes = 16;
constexpr size_t kMaxMessageBytes = 16u << 20;
constexpr auto kHardStopGrace = std::chrono::seconds(2);

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

void say(const std::string& message) { std::fprintf(stderr, "inference_probe: %s\n", message.c_str()); }

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// An owned file descriptor.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    Fd& operator=(Fd&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { reset(); }
    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

void put_u32(char* p, uint32_t v) {
    v = htonl(v);
    std::memcpy(p, &v, 4);
}
uint32_t get_u32(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return ntohl(v);
}

// ---------------------------------------------------------------- options

struct Options {
    std::map<std::string, std::string> values;
    std::vector<std::string> flags;
    bool has(const std::string& key) const { return values.count(key) != 0; }
    bool flag(const std::string& key) const {
        for (const auto& f : flags)
            if (f == key) return true;
        return false;
    }
};

// --key value / --key=value; `boolean` keys take no value. Duplicates and
// unknown keys are errors.
Result<Options> parse_options(int argc, char** argv, const std::vector<std::string>& keys,
                              const std::vector<std::string>& boolean) {
    Options out;
    auto known = [](const std::vector<std::string>& list, const std::string& k) {
        for (const auto& x : list)
            if (x == k) return true;
        return false;
    };
    for (int i = 0; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) return fail("unexpected argument '" + arg + "'");
        std::string key = arg.substr(2), value;
        bool inline_value = false;
        if (auto eq = key.find('='); eq != std::string::npos) {
            value = key.substr(eq + 1);
            key = key.substr(0, eq);
            inline_value = true;
        }
        if (known(boolean, key)) {
            if (inline_value) return fail("--" + key + " takes no value");
            if (out.flag(key)) return fail("--" + key + " given twice");
            out.flags.push_back(key);
            continue;
        }
        if (!known(keys, key)) return fail("unknown option --" + key);
        if (!inline_value) {
            if (i + 1 >= argc) return fail("--" + key + " needs a value");
            value = argv[++i];
        }
        if (out.has(key)) return fail("--" + key + " given twice");
        out.values[key] = value;
    }
    return out;
}

Result<double> number_option(const Options& o, const std::string& key, double fallback, double lo, double hi) {
    auto it = o.values.find(key);
    if (it == o.values.end()) return fallback;
    const std::string& text = it->second;
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        return fail("--" + key + " '" + text + "' is not a number");
    if (!(v >= lo && v <= hi))
        return fail("--" + key + " " + text + " is out of range (" + std::to_string(lo) + ".." + std::to_string(hi) +
                    ")");
    return v;
}

// ---------------------------------------------------------------- sockets

Result<std::vector<addrinfo>> resolve(const HostPort& hp, bool passive,
                                      std::unique_ptr<addrinfo, void (*)(addrinfo*)>& keep) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    addrinfo* res = nullptr;
    std::string port = std::to_string(hp.port);
    int rc = getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) return fail("cannot resolve '" + hp.host + "': " + gai_strerror(rc));
    keep.reset(res);
    std::vector<addrinfo> out;
    for (addrinfo* a = res; a; a = a->ai_next) out.push_back(*a);
    return out;
}

std::string address_text(const sockaddr* sa) {
    char host[INET6_ADDRSTRLEN] = "?";
    uint16_t port = 0;
    if (sa->sa_family == AF_INET) {
        auto* in = reinterpret_cast<const sockaddr_in*>(sa);
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
        port = ntohs(in->sin_port);
        return std::string(host) + ":" + std::to_string(port);
    }
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
}

Result<void> set_nonblocking(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return fail(errno_text("fcntl O_NONBLOCK"));
    return {};
}

// DSCP on the socket: the TOS byte is dscp << 2 (ECN bits left to the kernel).
Result<void> set_dscp(int fd, int family, std::optional<uint8_t> dscp) {
    if (!dscp) return {};
    int tos = *dscp << 2;
    if (family == AF_INET6) {
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof tos) < 0)
            return fail(errno_text("setsockopt IPV6_TCLASS"));
        // An IPv6 socket may still carry IPv4 (mapped addresses): mark both.
        (void)setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
    } else if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos) < 0) {
        return fail(errno_text("setsockopt IP_TOS"));
    }
    return {};
}

Result<void> set_congestion(int fd, const std::string& algo) {
    if (algo.empty()) return {};
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, algo.data(), static_cast<socklen_t>(algo.size())) < 0)
        return fail(errno_text(("setsockopt TCP_CONGESTION " + algo).c_str()));
    return {};
}

void set_nodelay(int fd) {
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int epoll_ctl_fd(int ep, int op, int fd, uint32_t events, uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return epoll_ctl(ep, op, fd, &ev);
}

int wait_events(int ep, epoll_event* events, int max, std::chrono::nanoseconds timeout) {
    if (timeout < std::chrono::nanoseconds(0)) timeout = std::chrono::nanoseconds(0);
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
    return epoll_pwait2(ep, events, max, &ts, nullptr);
}

// ---------------------------------------------------------------- serve

struct ServerConn {
    Fd fd;
    std::string in;
    std::string out;
    size_t out_sent = 0;
    bool reading = true;
};

int serve(int argc, char** argv) {
    auto opts = parse_options(argc, argv, {"listen", "reply-bytes", "dscp", "congestion", "exit-after"}, {});
    if (!opts) return say(opts.error().message), 1;
    if (!opts->has("listen")) return say("serve needs --listen ADDR:PORT"), 1;
    auto hp = parse_host_port(opts->values["listen"]);
    if (!hp) return say("--listen " + hp.error().message), 1;
    auto reply_bytes = number_option(*opts, "reply-bytes", 1024, kHeaderBytes, kMaxMessageBytes);
    if (!reply_bytes) return say(reply_bytes.error().message), 1;
    auto exit_after = number_option(*opts, "exit-after", 0, 0, 86400 * 365);
    if (!exit_after) return say(exit_after.error().message), 1;
    std::optional<uint8_t> dscp;
    if (opts->has("dscp")) {
        auto d = lanes::parse_dscp(opts->values["dscp"]);
        if (!d) return say("--dscp: " + d.error().message), 1;
        dscp = *d;
    }

    std::unique_ptr<addrinfo, void (*)(addrinfo*)> keep(nullptr, freeaddrinfo);
    auto addrs = resolve(*hp, true, keep);
    if (!addrs) return say(addrs.error().message), 1;
    Fd listener;
    std::string why;
    for (const addrinfo& a : *addrs) {
        Fd s(socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC, a.ai_protocol));
        if (s.get() < 0) {
            why = errno_text("socket");
            continue;
        }
        int one = 1, zero = 0;
        (void)setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (a.ai_family == AF_INET6) (void)setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        if (auto r = set_dscp(s.get(), a.ai_family, dscp); !r) {
            why = r.error().message;
            continue;
        }
        // Accepted sockets inherit the listener's congestion control.
        if (auto r = set_congestion(s.get(), opts->values["congestion"]); !r) return say(r.error().message), 1;
        if (bind(s.get(), a.ai_addr, a.ai_addrlen) < 0) {
            why = errno_text("bind");
            continue;
        }
        if (listen(s.get(), 1024) < 0) {
            why = errno_text("listen");
            continue;
        }
        listener = std::move(s);
        break;
    }
    if (listener.get() < 0) return say("cannot listen on " + opts->values["listen"] + ": " + why), 1;
    if (auto r = set_nonblocking(listener.get()); !r) return say(r.error().message), 1;
    sockaddr_storage bound{};
    socklen_t blen = sizeof bound;
    getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &blen);
    std::printf("inference_probe: serving on %s reply %zu bytes\n",
                address_text(reinterpret_cast<sockaddr*>(&bound)).c_str(), static_cast<size_t>(*reply_bytes));
    std::fflush(stdout);

    Fd ep(epoll_create1(EPOLL_CLOEXEC));
    if (ep.get() < 0) return say(errno_text("epoll_create1")), 1;
    constexpr uint64_t kListenerTag = ~uint64_t{0};
    epoll_ctl_fd(ep.get(), EPOLL_CTL_ADD, listener.get(), EPOLLIN, kListenerTag);

    std::map<uint64_t, ServerConn> conns;
    uint64_t next_tag = 1;
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*exit_after));
    std::vector<char> buf(1 << 16);
    const size_t default_reply = static_cast<size_t>(*reply_bytes);

    auto update_events = [&](uint64_t tag, ServerConn& c) {
        uint32_t ev =
            (c.reading ? uint32_t{EPOLLIN} : 0u) | (c.out_sent < c.out.size() ? uint32_t{EPOLLOUT} : 0u) | EPOLLRDHUP;
        epoll_ctl_fd(ep.get(), EPOLL_CTL_MOD, c.fd.get(), ev, tag);
    };
    auto flush = [&](ServerConn& c) -> bool {
        while (c.out_sent < c.out.size()) {
            ssize_t n = send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
            if (n > 0) {
                c.out_sent += static_cast<size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            return false;
        }
        if (c.out_sent == c.out.size()) {
            c.out.clear();
            c.out_sent = 0;
        } else if (c.out_sent > (1u << 20)) {
            c.out.erase(0, c.out_sent);
            c.out_sent = 0;
        }
        // Back-pressure: a client that does not read stops being read.
        c.reading = c.out.size() - c.out_sent < (4u << 20);
        return true;
    };

    epoll_event events[64];
    while (!g_stop) {
        auto timeout = std::chrono::nanoseconds(std::chrono::milliseconds(200));
        if (*exit_after > 0) {
            auto left = deadline - Clock::now();
            if (left <= Clock::duration::zero()) break;
            timeout = std::min<std::chrono::nanoseconds>(timeout, left);
        }
        int n = wait_events(ep.get(), events, 64, timeout);
        if (n < 0) {
            if (errno == EINTR) continue;
            return say(errno_text("epoll_pwait2")), 1;
        }
        for (int i = 0; i < n; ++i) {
            uint64_t tag = events[i].data.u64;
            if (tag == kListenerTag) {
                for (;;) {
                    int fd = accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0) break;
                    set_nodelay(fd);
                    uint64_t t = next_tag++;
                    ServerConn& c = conns[t];
                    c.fd = Fd(fd);
                    epoll_ctl_fd(ep.get(), EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLRDHUP, t);
                }
                continue;
            }
            auto it = conns.find(tag);
            if (it == conns.end()) continue;
            ServerConn& c = it->second;
            bool alive = true;
            if (events[i].events & EPOLLIN) {
                for (;;) {
                    ssize_t r = recv(c.fd.get(), buf.data(), buf.size(), 0);
                    if (r > 0) {
                        c.in.append(buf.data(), static_cast<size_t>(r));
                        continue;
                    }
                    if (r < 0 && errno == EINTR) continue;
                    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
                    alive = false;  // EOF or error
                    break;
                }
                size_t pos = 0;
                while (alive && c.in.size() - pos >= kHeaderBytes) {
                    const char* h = c.in.data() + pos;
                    uint32_t magic = get_u32(h), seq = get_u32(h + 4), len = get_u32(h + 8), want = get_u32(h + 12);
                    if (magic != kRequestMagic || len < kHeaderBytes || len > kMaxMessageBytes ||
                        want > kMaxMessageBytes) {
                        alive = false;  // not our protocol: drop the connection
                        break;
                    }
                    if (c.in.size() - pos < len) break;
                    pos += len;
                    size_t reply = want >= kHeaderBytes ? want : default_reply;
                    size_t at = c.out.size();
                    c.out.resize(at + reply, '\0');
                    put_u32(&c.out[at], kReplyMagic);
                    put_u32(&c.out[at + 4], seq);
                    put_u32(&c.out[at + 8], static_cast<uint32_t>(reply));
                }
                c.in.erase(0, pos);
            }
            if (alive && (events[i].events & (EPOLLERR | EPOLLHUP))) alive = false;
            if (alive) alive = flush(c);
            if (!alive) {
                conns.erase(it);  // closing the fd removes it from epoll
                continue;
            }
            update_events(tag, c);
        }
    }
    return 0;
}

// ---------------------------------------------------------------- load

struct Pending {
    uint64_t seq;
    Clock::time_point due;
    bool timed_out = false;
};

struct ClientConn {
    Fd fd;
    bool alive = true;
    std::string in;
    std::string out;
    size_t out_sent = 0;
    std::deque<Pending> pending;  // in send order: replies come back in this order
    size_t first_open = 0;        // pending[first_open..] have not timed out yet
};

Result<Fd> connect_one(const std::vector<addrinfo>& addrs, std::optional<uint8_t> dscp, const std::string& congestion,
                       Clock::time_point deadline, std::string& peer) {
    std::string why = "no address";
    for (const addrinfo& a : addrs) {
        Fd s(socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol));
        if (s.get() < 0) {
            why = errno_text("socket");
            continue;
        }
        if (auto r = set_dscp(s.get(), a.ai_family, dscp); !r) return std::unexpected(r.error());
        if (auto r = set_congestion(s.get(), congestion); !r) return std::unexpected(r.error());
        set_nodelay(s.get());
        if (connect(s.get(), a.ai_addr, a.ai_addrlen) < 0 && errno != EINPROGRESS) {
            why = errno_text("connect");
            continue;
        }
        Fd ep(epoll_create1(EPOLL_CLOEXEC));
        epoll_ctl_fd(ep.get(), EPOLL_CTL_ADD, s.get(), EPOLLOUT, 0);
        epoll_event ev{};
        int n = wait_events(ep.get(), &ev, 1, deadline - Clock::now());
        int err = 0;
        socklen_t len = sizeof err;
        if (n <= 0) {
            why = "connect: timed out";
            continue;
        }
        getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            why = std::string("connect: ") + std::strerror(err);
            continue;
        }
        peer = address_text(a.ai_addr);
        return s;
    }
    return fail(why);
}

int load(int argc, char** argv) {
    auto opts = parse_options(argc, argv,
                              {"connect", "rate", "duration", "request-bytes", "reply-bytes", "connections", "dscp",
                               "congestion", "timeout-ms", "metrics", "samples"},
                              {"json"});
    if (!opts) return say(opts.error().message), 1;
    if (!opts->has("connect")) return say("load needs --connect ADDR:PORT"), 1;
    auto hp = parse_host_port(opts->values["connect"]);
    if (!hp) return say("--connect " + hp.error().message), 1;
    if (hp->port == 0) return say("--connect: port 0 is not a destination"), 1;
    auto rate = number_option(*opts, "rate", 200, 0.001, 1e6);
    auto duration = number_option(*opts, "duration", 10, 0.001, 3600);
    auto request_bytes = number_option(*opts, "request-bytes", 256, kHeaderBytes, kMaxMessageBytes);
    auto reply_bytes = number_option(*opts, "reply-bytes", 0, 0, kMaxMessageBytes);
    auto connections = number_option(*opts, "connections", 4, 1, 1024);
    auto timeout_ms = number_option(*opts, "timeout-ms", 1000, 1, 3'600'000);
    for (auto* r : {&rate, &duration, &request_bytes, &reply_bytes, &connections, &timeout_ms})
        if (!*r) return say(r->error().message), 1;
    if (*reply_bytes != 0 && *reply_bytes < kHeaderBytes)
        return say("--reply-bytes must be 0 (the server's choice) or >= " + std::to_string(kHeaderBytes)), 1;
    if (*rate * *duration > 50e6) return say("--rate x --duration is over 50 million requests"), 1;
    std::optional<uint8_t> dscp;
    if (opts->has("dscp")) {
        auto d = lanes::parse_dscp(opts->values["dscp"]);
        if (!d) return say("--dscp: " + d.error().message), 1;
        dscp = *d;
    }
    const bool json = opts->flag("json");
    const auto timeout =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(*timeout_ms));

    std::unique_ptr<addrinfo, void (*)(addrinfo*)> keep(nullptr, freeaddrinfo);
    auto addrs = resolve(*hp, false, keep);
    if (!addrs) return say(addrs.error().message), 1;

    // Timers as precise as the kernel gives: latency includes our own wake-up lag.
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

    const auto setup_deadline = Clock::now() + std::chrono::seconds(2);
    std::vector<ClientConn> conns(static_cast<size_t>(*connections));
    std::string peer;
    for (auto& c : conns) {
        auto fd = connect_one(*addrs, dscp, opts->values["congestion"], setup_deadline, peer);
        if (!fd) return say("cannot connect to " + opts->values["connect"] + ": " + fd.error().message), 1;
        c.fd = std::move(*fd);
    }
    Fd ep(epoll_create1(EPOLL_CLOEXEC));
    if (ep.get() < 0) return say(errno_text("epoll_create1")), 1;
    for (size_t i = 0; i < conns.size(); ++i)
        epoll_ctl_fd(ep.get(), EPOLL_CTL_ADD, conns[i].fd.get(), EPOLLIN | EPOLLRDHUP, i);
    // --metrics: a listening socket (tag kMetricsListen) and its scrape
    // connections (tag kMetricsBase + fd), all non-blocking in this loop.
    constexpr uint64_t kMetricsListen = UINT64_MAX, kMetricsBase = uint64_t{1} << 62;
    LatencyHistogram histogram;
    Fd metrics_listen;
    std::map<int, std::pair<Fd, std::string>> scrapes;
    if (opts->has("metrics")) {
        auto mhp = parse_host_port(opts->values["metrics"]);
        if (!mhp) return say("--metrics " + mhp.error().message), 1;
        std::unique_ptr<addrinfo, void (*)(addrinfo*)> mkeep(nullptr, freeaddrinfo);
        auto maddrs = resolve(*mhp, true, mkeep);
        if (!maddrs || maddrs->empty()) return say("--metrics: cannot resolve " + opts->values["metrics"]), 1;
        const addrinfo& a = maddrs->front();
        metrics_listen = Fd(socket(a.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        int one = 1;
        setsockopt(metrics_listen.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (metrics_listen.get() < 0 || bind(metrics_listen.get(), a.ai_addr, a.ai_addrlen) != 0 ||
            listen(metrics_listen.get(), 16) != 0)
            return say(errno_text(("--metrics " + opts->values["metrics"]).c_str())), 1;
        epoll_ctl_fd(ep.get(), EPOLL_CTL_ADD, metrics_listen.get(), EPOLLIN, kMetricsListen);
    }
    auto on_metrics_event = [&](uint64_t tag) {
        if (tag == kMetricsListen) {
            for (;;) {
                int fd = accept4(metrics_listen.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) break;
                if (scrapes.size() >= 64) {
                    ::close(fd);
                    continue;
                }
                scrapes.emplace(fd, std::make_pair(Fd(fd), std::string()));
                epoll_ctl_fd(ep.get(), EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLRDHUP,
                             kMetricsBase + static_cast<uint64_t>(fd));
            }
            return;
        }
        const int fd = static_cast<int>(tag - kMetricsBase);
        auto it = scrapes.find(fd);
        if (it == scrapes.end()) return;
        std::string& in = it->second.second;
        char rbuf[4096];
        ssize_t r;
        while ((r = recv(fd, rbuf, sizeof rbuf, 0)) > 0 && in.size() < 16384) in.append(rbuf, static_cast<size_t>(r));
        const bool closed = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        if (in.find("\r\n\r\n") != std::string::npos) {
            const std::string body = histogram.prometheus_text();
            const std::string reply = "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                                      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
            // A few KiB: fits the socket buffer of a fresh connection in one send.
            (void)!send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
            scrapes.erase(it);  // closes
        } else if (closed || in.size() >= 16384) {
            scrapes.erase(it);
        }
    };

    const auto start = Clock::now() + std::chrono::milliseconds(1);
    OpenLoopSchedule schedule(start, *rate, *duration);
    const auto send_end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*duration));
    const auto hard_stop = send_end + kHardStopGrace;
    LatencyRecorder rec;
    rec.attach(&histogram);
    histogram.set_offered_rate(*rate);
    rec.set_scheduled(schedule.count());
    rec.reserve(schedule.count());

    std::string request(static_cast<size_t>(*request_bytes), '\0');
    put_u32(request.data(), kRequestMagic);
    put_u32(request.data() + 8, static_cast<uint32_t>(request.size()));
    put_u32(request.data() + 12, static_cast<uint32_t>(*reply_bytes));

    size_t live = conns.size();
    uint64_t next = 0, rr = 0;
    Clock::duration max_lag{};
    std::vector<char> buf(1 << 16);

    auto kill = [&](size_t idx) {
        ClientConn& c = conns[idx];
        if (!c.alive) return;
        c.alive = false;
        --live;
        for (size_t k = c.first_open; k < c.pending.size(); ++k) rec.record_error();
        c.pending.clear();
        c.first_open = 0;
        c.fd.reset();
    };
    auto want_events = [&](size_t idx) {
        ClientConn& c = conns[idx];
        uint32_t ev = EPOLLIN | EPOLLRDHUP | (c.out_sent < c.out.size() ? uint32_t{EPOLLOUT} : 0u);
        epoll_ctl_fd(ep.get(), EPOLL_CTL_MOD, c.fd.get(), ev, idx);
    };
    auto flush = [&](size_t idx) {
        ClientConn& c = conns[idx];
        bool had = c.out_sent < c.out.size();
        while (c.out_sent < c.out.size()) {
            ssize_t n = send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
            if (n > 0) {
                c.out_sent += static_cast<size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            kill(idx);
            return;
        }
        if (c.out_sent == c.out.size()) {
            c.out.clear();
            c.out_sent = 0;
        }
        bool has = c.out_sent < c.out.size();
        if (has != had) want_events(idx);
    };
    auto read_replies = [&](size_t idx) {
        ClientConn& c = conns[idx];
        bool eof = false;
        for (;;) {
            ssize_t r = recv(c.fd.get(), buf.data(), buf.size(), 0);
            if (r > 0) {
                c.in.append(buf.data(), static_cast<size_t>(r));
                continue;
            }
            if (r < 0 && errno == EINTR) continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            eof = true;
            break;
        }
        const auto now = Clock::now();
        size_t pos = 0;
        while (c.in.size() - pos >= kHeaderBytes) {
            const char* h = c.in.data() + pos;
            uint32_t magic = get_u32(h), seq = get_u32(h + 4), len = get_u32(h + 8);
            if (magic != kReplyMagic || len < kHeaderBytes || len > kMaxMessageBytes || c.pending.empty() ||
                static_cast<uint32_t>(c.pending.front().seq) != seq) {
                say("connection " + std::to_string(idx) + ": reply out of protocol; dropping the connection");
                eof = true;
                break;
            }
            if (c.in.size() - pos < len) break;
            pos += len;
            Pending p = c.pending.front();
            c.pending.pop_front();
            if (c.first_open > 0) --c.first_open;
            else if (!p.timed_out) rec.record_ok(now - p.due);
        }
        c.in.erase(0, pos);
        if (eof) kill(idx);
    };
    auto expire = [&](Clock::time_point now, bool all) {
        for (auto& c : conns) {
            while (c.first_open < c.pending.size()) {
                Pending& p = c.pending[c.first_open];
                if (!all && now - p.due < timeout) break;
                p.timed_out = true;
                rec.record_timeout(now - p.due);
                ++c.first_open;
            }
        }
    };
    auto outstanding = [&] {
        for (auto& c : conns)
            if (c.first_open < c.pending.size()) return true;
        return false;
    };

    signal(SIGPIPE, SIG_IGN);
    epoll_event events[64];
    for (;;) {
        auto now = Clock::now();
        while (next < schedule.count() && schedule.at(next) <= now) {
            if (live == 0) {  // nothing left to send on: the rest fail
                for (; next < schedule.count(); ++next) rec.record_error();
                break;
            }
            size_t idx;
            do idx = rr++ % conns.size();
            while (!conns[idx].alive);
            ClientConn& c = conns[idx];
            put_u32(request.data() + 4, static_cast<uint32_t>(next));
            c.out += request;
            c.pending.push_back({next, schedule.at(next)});
            max_lag = std::max(max_lag, now - schedule.at(next));
            ++next;
            flush(idx);
        }
        expire(now, false);
        if (g_stop || now >= hard_stop) break;
        if (next >= schedule.count() && !outstanding()) break;
        auto wake = hard_stop;
        if (next < schedule.count()) wake = std::min(wake, schedule.at(next));
        if (outstanding()) wake = std::min(wake, now + std::chrono::milliseconds(5));
        int n = wait_events(ep.get(), events, 64, wake - Clock::now());
        if (n < 0 && errno != EINTR) return say(errno_text("epoll_pwait2")), 1;
        for (int i = 0; i < n; ++i) {
            if (events[i].data.u64 >= kMetricsBase) {
                on_metrics_event(events[i].data.u64);
                continue;
            }
            size_t idx = static_cast<size_t>(events[i].data.u64);
            if (idx >= conns.size() || !conns[idx].alive) continue;
            if (events[i].events & EPOLLOUT) flush(idx);
            if (conns[idx].alive && (events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                read_replies(idx);
        }
    }
    // Whatever was never sent (interrupted) is an error; whatever is open, a timeout.
    for (; next < schedule.count(); ++next) rec.record_error();
    expire(Clock::now(), true);

    LatencySummary s = rec.summarize();
    if (opts->has("samples")) {
        FILE* f = std::fopen(opts->values["samples"].c_str(), "w");
        if (!f) return say("--samples " + opts->values["samples"] + ": " + std::strerror(errno)), 1;
        for (int64_t ns : rec.samples()) std::fprintf(f, "%.6f\n", static_cast<double>(ns) / 1e6);
        if (std::fclose(f) != 0) return say("--samples " + opts->values["samples"] + ": write failed"), 1;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (json) {
        char extra[512];
        std::snprintf(extra, sizeof extra,
                      "\"target\":\"%s\",\"rate\":%g,\"duration_s\":%g,\"connections\":%zu,\"request_bytes\":%zu,"
                      "\"reply_bytes\":%zu,\"dscp\":%d,\"elapsed_s\":%.3f,\"max_send_lag_ms\":%.3f,",
                      peer.c_str(), *rate, *duration, conns.size(), request.size(), static_cast<size_t>(*reply_bytes),
                      dscp ? int(*dscp) : -1, elapsed, std::chrono::duration<double, std::milli>(max_lag).count());
        std::printf("%s\n", summary_json(s, extra).c_str());
    } else {
        std::printf("inference_probe: load %s rate %g/s for %g s, %zu connections, request %zu B%s\n", peer.c_str(),
                    *rate, *duration, conns.size(), request.size(),
                    dscp ? (", dscp " + lanes::dscp_name(*dscp)).c_str() : "");
        std::printf("%s", summary_text(s).c_str());
        std::printf("max send lag ms %.3f\n", std::chrono::duration<double, std::milli>(max_lag).count());
    }
    std::fflush(stdout);
    return s.ok > 0 ? 0 : 3;
}

int usage(FILE* out) {
    std::fprintf(out,
                 "usage: inference_probe serve --listen ADDR:PORT [--reply-bytes 1024] [--dscp NAME]\n"
                 "                             [--congestion ALGO] [--exit-after SECONDS]\n"
                 "       inference_probe load --connect ADDR:PORT --rate 200 --duration 10\n"
                 "                            [--request-bytes 256] [--reply-bytes N] [--connections 4]\n"
                 "                            [--dscp EF] [--congestion ALGO] [--timeout-ms 1000] [--json]\n"
                 "                            [--samples FILE]\n"
                 "                            [--metrics ADDR:PORT]\n"
                 "IPv6 addresses as [ADDR]:PORT. Latency is measured from each request's scheduled\n"
                 "send time (open loop); sends stop at --duration, everything stops 2 s later.\n");
    return out == stdout ? 0 : 1;
}

}  // namespace
}  // namespace lanes::bench

int main(int argc, char** argv) {
    using namespace lanes::bench;
    if (argc < 2) return usage(stderr);
    std::string_view mode = argv[1];
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    try {
        if (mode == "serve") return serve(argc - 2, argv + 2);
        if (mode == "load") return load(argc - 2, argv + 2);
        if (mode == "--help" || mode == "-h" || mode == "help") return usage(stdout);
    } catch (const std::exception& e) {
        say(std::string("fatal: ") + e.what());
        return 1;
    }
    say("unknown mode '" + std::string(mode) + "' (serve or load)");
    return usage(stderr);
}
