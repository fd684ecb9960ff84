#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (5) 500 jobs of apply/remove churn in one process leak nothing: no classes, no
# chains, no map elements, no cgroup dirs, no state files or minor claims, and no
# file descriptors of the process.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"
ROUNDS=${ROUNDS:-500}

report=$($NA timeout 300 "$TOOL" --state "$STATE" --nic "$DEV" \
  --speed "$SPEED" --cgroup-root "$CGROOT" churn "$ROUNDS") || fail "churn: $report"
echo "$report"
val() { echo "$report" | awk -v k="$1" '$1 == k {print $2, $3}'; }
set -- $(val fds);          [ "$1" = "$2" ] || fail "fds grew from $1 to $2"
set -- $(val classes);      [ "$1" = "$2" ] || fail "HTB classes went from $1 to $2"
set -- $(val state_files);  [ "$1" = 0 ] || fail "$1 state files left"
set -- $(val minor_claims); [ "$1" = 0 ] || fail "$1 minor claims left"
set -- $(val cgroup_dirs);  [ "$1" = 0 ] || fail "$1 cgroup dirs left"
lanes=$($NA nft list table inet lanes)
echo "$lanes" | grep -q "chain job_" && fail "nft chains left"
echo "$lanes" | grep -q "elements" && fail "nft map elements left"
[ "$($NA tc qdisc show dev "$DEV" | grep -c .)" -eq 1 ] || fail "leaf qdiscs left"
echo "PASS"
