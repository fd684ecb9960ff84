#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/launch_storm.sh in CI size (3 nodes, 3 baseline jobs, a storm of 20),
# so that it cannot rot. Asserts behaviour, never times:
#   - every job ran (its output says so) and every job was shaped on its node
#     (spank_lanes logged "shaped ... in T ms" for it);
#   - the figures were printed: median and p99 for the baseline and the
#     storm, and their ratio, and the node lock's share (its wait for every
#     job shaped: spank_lanes logs it, the bench reads it), and the step's
#     setup (the batch step's start and its task 0, logged at verbose) for
#     every job that ran;
#   - nothing of Lanes was left on any node once the jobs ended (no class,
#     nft element, state file or cgroup).
set -uo pipefail
if (($(id -u) != 0)); then
    echo "SKIP: needs root (Slurm cluster, network namespaces, tc)"
    exit 77
fi
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${LANES_BUILDDIR:-.}
build=$(cd "$build" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/lanes-storm-smoke.XXXXXX")
trap 'rm -rf "$out"' EXIT
LANES_SRCDIR=$src LANES_BUILDDIR=$build timeout --foreground -k 30 300 bash "$src/bench/launch_storm.sh" \
    --nodes 3 --single 3 --jobs 20 --json "$out/storm.json" >"$out/run.log" 2>&1
rc=$?
((rc == 77)) && { echo "SKIP: $(tail -1 "$out/run.log")"; exit 77; }
cat "$out/run.log"
((rc == 0)) || { echo "FAIL: launch_storm.sh exited $rc"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

[[ -s $out/storm.json ]] || fail "no --json output"
field() { jq -r "$1" "$out/storm.json"; }
for phase in single storm; do
    want=$(field ".$phase.submitted")
    [[ $want == "$([[ $phase == single ]] && echo 3 || echo 20)" ]] || fail "$phase: $want jobs submitted"
    (($(field ".$phase.ran") == want)) || fail "$phase: $(field ".$phase.ran") of $want jobs ran"
    (($(field ".$phase.shaped") == want)) || fail "$phase: $(field ".$phase.shaped") of $want jobs shaped"
    [[ $(field ".$phase.median_ms") != null && $(field ".$phase.p99_ms") != null ]] || fail "$phase: no median or p99"
done
(($(field '.left_on_nodes') == 0)) || fail "$(field '.left_on_nodes') objects left on the nodes"
[[ $(field '.ratio_median') != null ]] || fail "no storm/single ratio"
[[ $(field '.requeued.storm') =~ ^[0-9]+$ ]] || fail "no count of the jobs slurmctld requeued"
grep -qE '^requeued by slurmctld: single [0-9]+, storm [0-9]+' "$out/run.log" || fail "no requeued line"
grep -qE '^launch_storm: cluster: slurmctld \+ 3 slurmd \([0-9]+ CPUs each, MessageTimeout=60\)' "$out/run.log" ||
    fail "the cluster line does not give MessageTimeout=60 (the storm's default)"
# A bad --message-timeout is refused, named, before any cluster starts.
msg=$(LANES_SRCDIR=$src LANES_BUILDDIR=$build bash "$src/bench/launch_storm.sh" --message-timeout 0 2>&1)
[[ $? -eq 1 && $msg == *"--message-timeout must be a number of seconds from 1 to 3600"* ]] ||
    fail "--message-timeout 0: $msg"
grep -qE '^all +3 +[0-9.]+ +[0-9.]+ +20 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$' "$out/run.log" ||
    fail "no overall figures line (with the storm's lock wait)"
# spank_lanes logged the node lock's share of every setup, and it was read.
for phase in single storm; do
    (($(field ".$phase.lock_wait.jobs") == $(field ".$phase.shaped"))) ||
        fail "$phase: $(field ".$phase.lock_wait.jobs") lock waits for $(field ".$phase.shaped") jobs shaped"
    # and, where the kernel keeps a run-queue delay, the hold's time preempted.
    if [[ -r /proc/thread-self/schedstat ]]; then
        (($(field ".$phase.lock_held_runqueue.jobs") == $(field ".$phase.shaped"))) ||
            fail "$phase: the hold's time preempted of $(field ".$phase.lock_held_runqueue.jobs") jobs for $(field ".$phase.shaped") shaped"
    fi
done
grep -qE '^node lock, storm \(ms\): waiting median [0-9.]+ p99 [0-9.]+, holding median' "$out/run.log" ||
    fail "no node lock line"
grep -qE '^ratio storm/single: median [0-9.]+x, p99 [0-9.]+x' "$out/run.log" || fail "no ratio line"
# The step's share: spank_lanes timed the batch step's start and task of every
# job that ran, and the bench read both.
for phase in single storm; do
    (($(field ".$phase.step_setup.jobs") == $(field ".$phase.ran"))) ||
        fail "$phase: the step's setup of $(field ".$phase.step_setup.jobs") jobs for $(field ".$phase.ran") that ran"
done
[[ $(field '.ratio_step_median') != null ]] || fail "no storm/single ratio of the step's setup"
grep -qE '^step setup \(batch step start \+ task 0, ms\): single 3 jobs median [0-9.]+ p99 [0-9.]+, storm 20 jobs' \
    "$out/run.log" || fail "no step setup line"
echo "PASS: 3 + 20 jobs ran and were shaped, figures printed, nothing left on the nodes"
