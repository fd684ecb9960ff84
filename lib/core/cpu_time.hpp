// SPDX-License-Identifier: GPL-2.0-or-later
// CPU time this process has used, in ms. Beside the wall time of a job's setup
// (or of a hold of the node's lock) it tells one that waited (for the lock, for
// a CPU) from one that worked.
#pragma once

#include <time.h>

namespace lanes {

inline double process_cpu_ms() {
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

}  // namespace lanes
