#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/node_lock_bench.sh: one node's share of the launch storm (issue 24,
# item 3), without Slurm. In a private network namespace with a veth pair
# (tests/net/common.sh), J processes of tests/net/shaper_tool apply J jobs at
# once, as J prologs of one node do (each opens its NodeShaper, then apply();
# the real NodeShaper: netlink tc, nftables, cgroup dirs, state files); then
# the same J jobs one at a time. Per apply: its wall time (from the process's
# start, as the prolog's log line), the time it waited for the node's lock,
# the time it held it and the CPU it used meanwhile.
#
#   sudo bench/node_lock_bench.sh [--jobs J] [--rounds R] [--state-base DIR]
#
#   --jobs J          applies at once (default 20: 200 jobs over 10 nodes)
#   --rounds R        rounds of (J at once, J one by one), jobs removed in
#                     between (default 3)
#   --state-base DIR  where the state dir is made (default /tmp; /dev/shm for
#                     a tmpfs, as /run is on most nodes)
#
# Printed: median and p99 of each figure, at once and one by one, and their
# ratio; per round, the applies' CPU over the machine's CPUs (no round can end
# sooner, lock or no lock) beside the time the lock was held in all. A benchmark: it asserts nothing about time. Needs root and
# `make tests/net/shaper_tool`; LANES_BUILDDIR (default ./build).
set -u
jobs=20 rounds=3
while (($#)); do
    case $1 in
        --jobs) jobs=${2-}; shift ;;
        --rounds) rounds=${2-}; shift ;;
        --state-base) export LANES_NET_STATE_BASE=${2-}; shift ;;
        -h | --help) sed -n '3,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "node_lock_bench: unknown option '$1' (see --help)" >&2; exit 1 ;;
    esac
    shift
done
[[ $jobs =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || { echo "node_lock_bench: --jobs/--rounds: numbers" >&2; exit 1; }
export LANES_BUILDDIR=${LANES_BUILDDIR:-./build}
# shellcheck source=tests/net/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/net/common.sh"

apply_one() {
    timeout 120 $NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" \
        apply "$1" --rate 10Mbit --ceil 1Gbit --dscp CS1 --times 1
}
remove_all_jobs() {
    local j
    for j in "$@"; do tool remove "$j" >/dev/null || fail "remove $j"; done
}
out=$STATE_ROOT/times
: >"$out"
# A first job, so that every round finds the root and the table made (a node
# with jobs running), as most prologs of a storm do.
tool apply 1 --rate 10Mbit --dscp CS1 >/dev/null || fail "apply 1"
for ((r = 0; r < rounds; r++)); do
    ids=$(seq $((1000 * (r + 1))) $((1000 * (r + 1) + jobs - 1)))
    pids=()
    for j in $ids; do
        apply_one "$j" >"$STATE_ROOT/at_once.$j" 2>&1 &
        pids+=("$!")
    done
    for p in "${pids[@]}"; do wait "$p" || fail "an apply at once failed"; done
    for j in $ids; do sed -n "s/^times /at_once /p" "$STATE_ROOT/at_once.$j" >>"$out"; done
    remove_all_jobs $ids
    for j in $ids; do
        apply_one "$j" | sed -n "s/^times /alone /p" >>"$out" || fail "apply $j alone"
    done
    remove_all_jobs $ids
done
python3 - "$out" "$jobs" "$rounds" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$(stat -f -c %T "$STATE")" <<'PY'
import math, statistics, sys
path, jobs, rounds, cpus, load, fs = sys.argv[1:7]
rows = {"alone": [], "at_once": []}
for line in open(path):
    f = line.split()
    rows[f[0]].append({f[k]: float(f[k + 1]) for k in range(1, len(f) - 1, 2)})
def p99(xs):
    s = sorted(xs)
    return s[max(0, math.ceil(0.99 * len(s)) - 1)]
keys = [("wall_ms", "wall (process start to applied)"), ("lock_wait_ms", "waiting for the node lock"),
        ("lock_held_ms", "holding the node lock"), ("lock_held_cpu_ms", "CPU while holding it"),
        ("cpu_ms", "CPU of the apply process")]
print(f"node lock bench: {jobs} applies at once vs one by one, {rounds} round(s), "
      f"{len(rows['at_once'])} + {len(rows['alone'])} applies; state dir on {fs}; "
      f"{cpus} CPUs, load {load} at the end")
print(f"{'ms':<36}{'alone med':>10}{'p99':>9}{'at once med':>12}{'p99':>9}{'ratio med':>10}")
for k, name in keys:
    a = [r[k] for r in rows["alone"]]
    b = [r[k] for r in rows["at_once"]]
    ma, mb = statistics.median(a), statistics.median(b)
    ratio = f"{mb / ma:.1f}x" if ma > 0.05 else "-"
    print(f"{name:<36}{ma:>10.2f}{p99(a):>9.2f}{mb:>12.2f}{p99(b):>9.2f}{ratio:>10}")
b = rows["at_once"]
share = statistics.median(r["lock_wait_ms"] / r["wall_ms"] for r in b if r["wall_ms"] > 0)
print(f"at once: the lock wait is {100 * share:.0f} % of an apply's wall time (median over applies)")
# The CPU floor of a round: J processes' CPU on this machine's CPUs. A round
# cannot end sooner, lock or no lock; its slowest apply (the p99) against it.
floor = statistics.median(sum(r["cpu_ms"] for r in b[k:k + int(jobs)]) / int(cpus)
                          for k in range(0, len(b), int(jobs)))
held = statistics.median(sum(r["lock_held_ms"] for r in b[k:k + int(jobs)]) for k in range(0, len(b), int(jobs)))
print(f"at once, per round (median of rounds): the applies' CPU / {cpus} CPUs = {floor:.1f} ms; "
      f"the lock held {held:.1f} ms in all; the slowest apply {p99([r['wall_ms'] for r in b]):.1f} ms (p99)")
PY
