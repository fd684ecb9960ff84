// SPDX-License-Identifier: GPL-2.0-or-later
// lanes-policy-worker: runs the admin's Lua policy for job_submit/lanes and
// lanesctl, one classification at a time, over the socket on fd 3 (see
// lib/ctld/policy_wire.hpp). Started by PolicyWorkerPool, never by hand. The
// policy is untrusted code: before it runs, the worker limits its memory, CPU
// time and files, forbids new privileges and installs a seccomp filter that
// allows only reading and writing fd 3, memory management and clocks; any
// other system call kills it. Its caller kills it when a call overruns the
// time budget, so nothing here has to stop a runaway policy by itself.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "core/lanes_toml.hpp"
#include "ctld/policy.hpp"
#include "ctld/policy_wire.hpp"
#include "ctld/router.hpp"
#include "ctld/windows_config.hpp"
#include "ctld/worker_io.hpp"

namespace {

using namespace lanes;

constexpr int kFd = 3;
// A worker that has used this much CPU retires after its answer (RLIMIT_CPU,
// the backstop for an orphan that spins, is twice as much).
constexpr long kRetireCpuSeconds = 60;

[[noreturn]] void lost() { ::_exit(0); }  // the caller is gone or spoke garbage

void send_frame(const std::string& frame) {
    if (wire::write_frame(kFd, frame) != wire::IoStatus::Ok) lost();
}

// The caller's WindowOracle, asked over the socket.
class RemoteOracle final : public WindowOracle {
public:
    bool known(const std::string& name) const override { return ask(wire::Query::Op::Known, name, {}).flag; }
    bool in_window(const std::string& name, SysSeconds at) const override {
        return ask(wire::Query::Op::InWindow, name, at).flag;
    }
    std::optional<SysSeconds> next_start(const std::string& name, SysSeconds at) const override {
        return ask(wire::Query::Op::NextStart, name, at).time;
    }
    std::optional<SysSeconds> next_end(const std::string& name, SysSeconds at) const override {
        return ask(wire::Query::Op::NextEnd, name, at).time;
    }
    std::string describe(const std::string& name, SysSeconds at) const override {
        return ask(wire::Query::Op::Describe, name, at).text;
    }
    std::optional<SignalValue> signal(const std::string& name) const override {
        return ask(wire::Query::Op::Signal, name, {}).signal;
    }

private:
    static wire::Answer ask(wire::Query::Op op, const std::string& name, SysSeconds at) {
        send_frame(wire::encode(wire::Query{op, name, at}));
        wire::Frame frame;
        if (wire::read_frame(kFd, frame) != wire::IoStatus::Ok || frame.type != wire::Type::Answer) lost();
        auto a = wire::decode_answer(frame.payload);
        if (!a) lost();
        return std::move(*a);
    }
};

void close_other_fds() {
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, kFd + 1, ~0U, 0) == 0) return;
#endif
    for (int fd = kFd + 1; fd < 65536; ++fd) ::close(fd);
}

void set_limit(int resource, rlim_t value) {
    struct rlimit rl {
        value, value
    };
    ::setrlimit(resource, &rl);
}

#if defined(__x86_64__)
#define LANES_SECCOMP_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define LANES_SECCOMP_ARCH AUDIT_ARCH_AARCH64
#endif

// Only what serving classifications needs; anything else kills the process.
bool install_seccomp(std::string& error) {
#ifdef LANES_SECCOMP_ARCH
    std::vector<sock_filter> f;
    auto stmt = [&](uint16_t code, uint32_t k) { f.push_back(BPF_STMT(code, k)); };
    auto jump = [&](uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) { f.push_back(BPF_JUMP(code, k, jt, jf)); };
    const uint32_t kill = SECCOMP_RET_KILL_PROCESS;
    stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    jump(BPF_JMP | BPF_JEQ | BPF_K, LANES_SECCOMP_ARCH, 1, 0);
    stmt(BPF_RET | BPF_K, kill);
    stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);  // x32 system calls
    stmt(BPF_RET | BPF_K, kill);
#endif
    // read/write/sendto: fd 3 only (the argument's low word; fds are ints).
    const long on_fd[] = {SYS_read, SYS_write, SYS_sendto};
    for (long nr : on_fd) {
        jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 4);
        stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
        jump(BPF_JMP | BPF_JEQ | BPF_K, kFd, 0, 1);
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        stmt(BPF_RET | BPF_K, kill);  // another fd
    }
    // (The jumps above fall through to here only for other system calls.)
    const long allowed[] = {
        SYS_brk,          SYS_mmap,           SYS_munmap,        SYS_mremap,       SYS_madvise,
        SYS_mprotect,     SYS_futex,          SYS_clock_gettime, SYS_clock_getres, SYS_gettimeofday,
        SYS_rt_sigreturn, SYS_rt_sigprocmask, SYS_exit,          SYS_exit_group,
#ifdef SYS_time
        SYS_time,
#endif
    };
    for (long nr : allowed) {
        jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1);
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    }
    stmt(BPF_RET | BPF_K, kill);
    struct sock_fprog prog {
        static_cast<unsigned short>(f.size()), f.data()
    };
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        error = std::string("cannot install the seccomp filter: ") + std::strerror(errno);
        return false;
    }
#else
    (void)error;
#endif
    return true;
}

long cpu_seconds() {
    struct timespec ts {};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec;
}

int serve() {
    // Killed when the thread that started it ends (slurmctld's reloader, or
    // lanesctl): the caller sees it gone and starts another.
    pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) return 0;  // it is gone already
    close_other_fds();
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    set_limit(RLIMIT_CORE, 0);
    set_limit(RLIMIT_CPU, 2 * kRetireCpuSeconds);
    set_limit(RLIMIT_NPROC, 0);

    wire::Frame frame;
    if (wire::read_frame(kFd, frame) != wire::IoStatus::Ok || frame.type != wire::Type::Init) return 1;
    auto init = wire::decode_init(frame.payload);
    if (!init) {
        send_frame(wire::encode(wire::Ready{false, init.error().message}));
        return 1;
    }
    frame.payload.clear();
    frame.payload.shrink_to_fit();
    // The configuration is trusted (root's file, parsed by the caller already);
    // time zones are read here, before the filter.
    auto parsed = parse_controller_config(init->config_text, init->config_path);
    if (!parsed) {
        send_frame(wire::encode(wire::Ready{false, parsed.error().message}));
        return 1;
    }
    Config config = std::move(*parsed);
    config.text.clear();
    config.policy.worker.clear();  // here the policy runs in this process
    // The Lua hook's own time budget ends a little before the caller's
    // deadline, so an ordinary runaway loop gets its file:line message.
    config.policy.time_budget -= config.policy.time_budget / 8;
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    // Lua's heap is capped by policy.memory_limit; this caps everything else.
    set_limit(RLIMIT_DATA, static_cast<rlim_t>(config.policy.memory_limit_bytes) * 2 + (256u << 20));
#endif
    set_limit(RLIMIT_NOFILE, kFd + 1);  // time zones are read: no more files
    std::string error;
    if (!install_seccomp(error)) {
        send_frame(wire::encode(wire::Ready{false, init->chunk_name + ": " + error}));
        return 1;
    }
    LogSink sink = [](LogLevel level, const std::string& line) {
        send_frame(wire::encode(wire::LogLine{level, line}));
    };
    auto policy = Policy::compile(std::move(init->source), init->chunk_name,
                                  std::make_shared<const Config>(std::move(config)), sink, 1);
    if (!policy) {
        send_frame(wire::encode(wire::Ready{false, policy.error().message}));
        return 1;
    }
    send_frame(wire::encode(wire::Ready{true, ""}));

    RemoteOracle windows;
    while (true) {
        auto status = wire::read_frame(kFd, frame);
        if (status != wire::IoStatus::Ok || frame.type != wire::Type::Classify) return 0;
        auto request = wire::decode_classify(frame.payload);
        if (!request) return 1;
        uint64_t rebuilds = (*policy)->rebuilds();
        wire::Outcome out;
        out.outcome = (*policy)->classify(request->job, request->now, windows);
        // A state that hit a budget is not reused, and rebuilding it here
        // would run the top level inside the next job's time: retire instead.
        out.retire = (*policy)->rebuilds() != rebuilds || cpu_seconds() >= kRetireCpuSeconds;
        send_frame(wire::encode(out));
        if (out.retire) return 0;
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2 || std::strcmp(argv[1], "--serve-fd=3") != 0) {
        std::fprintf(stderr,
                     "lanes-policy-worker: runs the Lanes Lua policy for job_submit/lanes and lanesctl;\n"
                     "it is started by them (with --serve-fd=3), not by hand. See lanes-policy(7).\n");
        return 2;
    }
    try {
        return serve();
    } catch (...) {
        return 1;
    }
}
