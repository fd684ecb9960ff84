#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank_lanes.so is loaded by every srun, sbatch, salloc and slurmstepd: it
# carries what the node needs and nothing the controller or the agent own.
# Reads the built object with nm, so a convenience library that drags a wing
# back in (libtool links them whole into a module) fails here, not in review.
set -uo pipefail
build=${LANES_BUILDDIR:?run through make check}
so=$build/spank/.libs/spank_lanes.so
[[ -f $so ]] || { echo "FAIL: spank/.libs/spank_lanes.so not built"; exit 1; }
command -v nm >/dev/null || { echo "FAIL: nm (binutils) is missing"; exit 1; }
status=0
syms=$(nm -C "$so") || { echo "FAIL: nm cannot read $so"; exit 1; }
# What must not be there, and whose it is.
absent=(
    'lanes::SignalWindowTracker::|signal windows (lib/signals)'
    'lanes::parse_prometheus_answer|the Prometheus answer parser (lib/signals)'
    'lanes::effective_value|signal freshness (lib/signals)'
    'lanes::SignalMonitor::|the signal refresh threads (lib/signals)'
    'curl_easy_|libcurl (lib/signals)'
    'lua_pcall|Lua (lib/ctld)'
    'lanes::Policy::|the policy engine (lib/ctld)'
    'lanes::TimeZone::|time zones (lib/ctld)'
    'lanes::WindowSet::|window occurrences (lib/ctld)'
)
for entry in "${absent[@]}"; do
    pattern=${entry%%|*} what=${entry#*|}
    # Not "hits=$(...) && ...": with pipefail, head leaving early makes grep die
    # of SIGPIPE on a long match list, and the test would pass what it must fail.
    hits=$(grep -F -- "$pattern" <<<"$syms" | head -3)
    if [[ -n $hits ]]; then
        echo "FAIL: spank_lanes.so carries $what:"
        sed 's/^/    /' <<<"$hits"
        status=1
    fi
done
# And what it must have, so an empty or wrong file does not pass.
grep -q ' T slurm_spank_init$' <<<"$syms" || { echo "FAIL: spank_lanes.so has no slurm_spank_init"; status=1; }
grep -qF 'lanes::load_config' <<<"$syms" || { echo "FAIL: spank_lanes.so has no lanes::load_config"; status=1; }
[[ $status == 0 ]] && echo "PASS: spank_lanes.so carries no signal, Lua, libcurl, time zone or window code"
exit $status
