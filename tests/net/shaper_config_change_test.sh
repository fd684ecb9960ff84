#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (#11.7) lanes.toml changes between a job's prolog and its epilog: the job's
# state file keeps what teardown needs. A new root_handle: running jobs keep the
# old root (a new job joins it instead of refusing it as foreign), the epilog
# removes the classes under the root the job was made with, and the old root goes
# with its last job. A new state_dir: the epilog finds the job in the state dir of
# its prolog.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"

old() { $NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" --major 1a4e "$@"; }
new() { $NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" --major 1b00 "$@"; }

old apply 31 --rate 50Mbit --dscp CS1 >/dev/null || fail "apply 31 (root 1a4e)"
minor=$(old list | awk '$1 == 31 {print $3}')
# The admin changes root_handle while job 31 runs: the next prolog must not see
# 1a4e: as foreign.
out=$(new apply 32 --rate 50Mbit 2>&1) || fail "apply 32 after root_handle changed: $out"
$NA tc qdisc show dev "$DEV" | grep -q "qdisc htb 1a4e: root" || fail "the running jobs' root was replaced"
m32=$(new list | awk '$1 == 32 {print $3}')
$NA tc class show dev "$DEV" classid 1a4e:$m32 | grep -q . || fail "job 32 not under the running root 1a4e:"
# Epilogs with the new config: classes of the old root go, then the old root.
new remove 31 || fail "remove 31 with the new root_handle"
$NA tc class show dev "$DEV" classid 1a4e:$minor | grep -q . && fail "job 31's class 1a4e:$minor left behind"
new remove 32 || fail "remove 32"
$NA tc qdisc show dev "$DEV" | grep -q "htb 1a4e:" && fail "old root 1a4e: left after its last job: $($NA tc qdisc show dev "$DEV")"
out=$(new apply 33 --rate 50Mbit 2>&1) || fail "apply 33 on the new root: $out"
$NA tc qdisc show dev "$DEV" | grep -q "qdisc htb 1b00: root" || fail "the new root_handle is not used once idle"
new remove 33 || fail "remove 33"

# A new state_dir: job 34's state is in the old dir; the epilog runs with the new one.
NEWSTATE=$STATE_ROOT/state2
old apply 34 --rate 50Mbit --dscp CS1 >/dev/null || fail "apply 34"
m34=$(old list | awk '$1 == 34 {print $3}')
id34=$(cg_id "$CGROOT/job_34")
nft_holds ${P}a "set inet lanes dscp_8" "$CGROOT/job_34" || fail "job 34 not marked"
$NA "$TOOL" --state "$NEWSTATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" --major 1a4e remove 34 \
  || fail "remove 34 with another state_dir"
[ -e "$STATE/job_34" ] && fail "job 34's state left in the old state dir"
$NA tc class show dev "$DEV" classid 1a4e:$m34 | grep -q . && fail "job 34's class left behind"
nft_holds ${P}a "set inet lanes dscp_8" "$CGROOT/job_34" "$id34" && fail "job 34's mark left behind"
[ -d "$CGROOT/job_34" ] && fail "job 34's cgroup left behind"
tool remove-all || fail "remove-all"
echo "PASS"
