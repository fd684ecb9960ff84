// SPDX-License-Identifier: GPL-2.0-or-later
// The one try/catch every extern "C" entry point (Slurm plugin callbacks) goes
// through: no exception crosses into Slurm's C frames.
#pragma once

#include <exception>

namespace lanes {

// Runs body(); if it throws, reports what() (or "unknown error") and returns on_error.
template <typename Body, typename Report>
int guard_entry(int on_error, Report&& report, Body&& body) noexcept {
    try {
        return body();
    } catch (const std::exception& e) {
        report(e.what());
    } catch (...) {
        report("unknown error");
    }
    return on_error;
}

}  // namespace lanes
