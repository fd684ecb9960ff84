// SPDX-License-Identifier: GPL-2.0-or-later
// CPU time this process has used, in ms. Beside the wall time of a job's setup
// (or of a hold of the node's lock) it tells one that waited (for the lock, for
// a CPU) from one that worked.
#pragma once

#include <time.h>

#include <cstdio>
#include <optional>

namespace lanes {

inline double process_cpu_ms() {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// How long this thread has waited, runnable, for a CPU (the scheduler's
// run_delay, /proc/thread-self/schedstat), in ms; none where the kernel does
// not keep it. Beside the CPU time it splits a wall time spent off the CPU
// into preempted (waiting for a CPU) and blocked (waiting for anything else).
inline std::optional<double> thread_runqueue_wait_ms() {
    std::FILE* f = std::fopen("/proc/thread-self/schedstat", "re");
    if (!f) return std::nullopt;
    unsigned long long on_cpu = 0, waiting = 0;
    const int n = std::fscanf(f, "%llu %llu", &on_cpu, &waiting);
    std::fclose(f);
    if (n != 2) return std::nullopt;
    return static_cast<double>(waiting) / 1e6;
}

}  // namespace lanes
