#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Submit latency while a signal's server hangs, on a real cluster: job_submit/lanes
# with no signals vs with a [signals.NAME] whose server accepts the connection and
# never answers in time (fetches always in flight, timeout = interval = 30 s).
# Prints slurmctld's server-side time per submit (sdiag ave_time) and the
# client-side submit rate, medians of interleaved runs, and the ratios.
#
#   bash bench/signals_submit_bench.sh [JOBS=200]
# Needs root and a built tree (LANES_BUILDDIR, default ./build).
# shellcheck source=bench/e2e_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_bench.sh"
jobs=${1:-200}
T=$(mktemp -d /tmp/lsigbench.XXXXXX)
echo 0 >"$T/value"

run_variant() {  # NAME (plain|hung) -> "NAME ave_us submits_per_s"
    local name=$1 t0 t1 i fake=""
    e2e_pre_start() {
        [[ $name == hung ]] || return 0
        cat >>"$1/lanes.toml" <<TOML

[signals.hung]
url = "http://127.0.0.1:19091/slow"
query = "up"
interval = "30s"
timeout = "30s"

[windows.busy]
signal = "hung"
above = 1
TOML
        sed -i 's/^avoid_windows = \["peak"\]/avoid_windows = ["peak", "busy"]/' "$1/lanes.toml"
        nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" ip link set lo up
        nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" python3 "$LANES_SRCDIR/tests/signals/fake_api.py" \
            --port 19091 --port-file "$T/port" --value-file "$T/value" &
        fake=$!
    }
    E2E_MODE=offpeak e2e_start_cluster >/dev/null 2>&1 || { echo "cluster for $name failed" >&2; return 1; }
    for i in 1 2 3 4 5; do cluster_run_ctl sbatch --hold -J "train-w$i" -o /dev/null --wrap true >/dev/null; done
    cluster_run_ctl sdiag -r >/dev/null
    t0=$(date +%s.%N)
    for ((i = 0; i < jobs; i++)); do
        cluster_run_ctl sbatch --hold -J "train-$i" -o /dev/null --wrap true >/dev/null || echo "submit $i failed" >&2
    done
    t1=$(date +%s.%N)
    local ave
    ave=$(cluster_run_ctl sdiag | awk '/REQUEST_SUBMIT_BATCH_JOB/ { for (i = 1; i <= NF; i++) if ($i ~ /^ave_time:/) { sub("ave_time:", "", $i); print $i } }')
    cluster_stop >/dev/null 2>&1
    if [[ -n $fake ]]; then kill "$fake" 2>/dev/null; wait "$fake" 2>/dev/null; fi
    python3 -c "print('$name', '${ave:-nan}', round($jobs / ($t1 - $t0), 1))"
}

echo "# $jobs batch submissions per run; server time from sdiag (µs), throughput from the client"
results=$(for v in ${SIGNAL_BENCH_VARIANTS:-plain hung plain hung plain hung}; do run_variant "$v"; done)
rm -rf "$T"
printf '%s\n' "$results"
python3 - "$results" <<'PY'
import statistics, sys
runs = {}
for line in sys.argv[1].splitlines():
    if line.strip():
        name, us, rate = line.split()
        runs.setdefault(name, []).append((float(us), float(rate)))
med = {n: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for n, v in runs.items()}
for n, (us, rate) in med.items():
    print(f"{n:<6} runs {len(runs[n])}  server µs/submit (median) {us:.0f}  submits/s (median) {rate:.1f}")
if {"plain", "hung"} <= med.keys():
    print(f"ratio hung/plain: server time {med['hung'][0]/med['plain'][0]:.2f}  throughput {med['hung'][1]/med['plain'][1]:.2f}")
PY
