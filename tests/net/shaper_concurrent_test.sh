#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# (#24.3) Prologs and epilogs of one node at once (a launch storm: separate
# processes, as slurmd runs them) lose no job's objects and leave none behind.
# 16 applies started together, then 8 removes side by side with 8 more
# applies, then every remove at once. After each wave, for every running job:
# its state file, its own minor, its HTB class and leaf qdisc on the NIC, its
# cgroup in the nft table, and the node's count of shaped jobs; after the last,
# nothing of the jobs on the NIC (the root stays), in the table or in the state
# dir.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"

# wave OUT CMD JOB...: `tool CMD JOB` for every JOB, all started at once;
# fails if any of them failed (its output in OUT.JOB).
wave() {
  local out=$1 cmd=$2 j pids=() bad=""
  shift 2
  for j in "$@"; do
    if [ "$cmd" = apply ]; then
      timeout 120 $NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" \
        apply "$j" --rate 10Mbit --ceil 1Gbit --dscp CS1 >"$out.$j" 2>&1 &
    else
      timeout 120 $NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" \
        remove "$j" >"$out.$j" 2>&1 &
    fi
    pids+=("$!:$j")
  done
  for p in "${pids[@]}"; do
    wait "${p%%:*}" || bad="$bad ${p#*:}($(tr '\n' ' ' <"$out.${p#*:}"))"
  done
  [ -z "$bad" ] || fail "$cmd failed for job(s):$bad"
}

# files PREFIX: how many entries of the state dir start with PREFIX.
files() {
  local f n=0
  for f in "$STATE/$1"*; do [ -e "$f" ] && n=$((n + 1)); done
  echo "$n"
}

# running JOB...: exactly these jobs are shaped, each with all of its objects.
running() {
  local j minor classes qdiscs minors=" " n=$#
  classes=$($NA tc class show dev "$DEV")
  qdiscs=$($NA tc qdisc show dev "$DEV")
  for j in "$@"; do
    [ -f "$STATE/job_$j" ] || fail "job $j: no state file"
    minor=$(awk -F= '$1 == "minor" {print $2}' "$STATE/job_$j")
    [ -n "$minor" ] || fail "job $j: no minor in its state file"
    case $minors in *" $minor "*) fail "job $j: minor $minor given twice" ;; esac
    minors="$minors$minor "
    minor=$(printf %x "$minor")  # tc prints it in hex
    grep -q "class htb 1a4e:$minor parent 1a4e:1 leaf" <<<"$classes" || fail "job $j: no HTB class 1a4e:$minor"
    grep -q "parent 1a4e:$minor " <<<"$qdiscs" || fail "job $j: no leaf qdisc under 1a4e:$minor"
    [ -d "$CGROOT/job_$j" ] || fail "job $j: no cgroup dir"
    nft_holds "${P}a" "map inet lanes prio" "$CGROOT/job_$j" || fail "job $j: its cgroup is not in the nft map"
  done
  [ "$(files job_)" -eq "$n" ] || fail "$(files job_) state files for $n jobs"
  [ "$(grep -c "class htb 1a4e:[0-9a-f]* parent 1a4e:1 leaf" <<<"$classes")" -eq "$n" ] ||
    fail "$(grep -c "class htb 1a4e:[0-9a-f]* parent 1a4e:1 leaf" <<<"$classes") job classes with a leaf for $n jobs"
  [ "$(cat "$STATE/shaped_jobs")" -eq "$n" ] || fail "shaped_jobs says $(cat "$STATE/shaped_jobs"), $n run"
}

first=$(seq 101 116)
wave "$STATE_ROOT/apply" apply $first
running $first
echo "16 applies at once: every job has its objects"

wave "$STATE_ROOT/mixed" apply $(seq 201 208) &
mixed=$!
wave "$STATE_ROOT/remove" remove $(seq 101 108)
wait $mixed || fail "applies beside the removes"
now="$(seq 109 116) $(seq 201 208)"
running $now
echo "8 removes beside 8 applies: every running job has its objects"

wave "$STATE_ROOT/last" remove $now
[ "$(files job_)" -eq 0 ] || fail "state files left: $(ls "$STATE")"
[ "$(files minor_)" -eq 0 ] || fail "minor claims left"
# The root and its default class stay (as after any last job); no job's class,
# parked or not, and no leaf qdisc.
left=$($NA tc class show dev "$DEV" | grep -v -e "class htb 1a4e:1 root" -e "class htb 1a4e:fffe ")
[ -z "$left" ] || fail "classes left: $left"
[ "$($NA tc qdisc show dev "$DEV" | grep -c .)" -eq 1 ] || fail "leaf qdiscs left: $($NA tc qdisc show dev "$DEV")"
$NA nft list map inet lanes prio 2>/dev/null | grep -q "elements" && fail "nft map elements left"
[ -z "$(ls -d "$CGROOT"/job_* 2>/dev/null)" ] || fail "cgroup dirs left"
echo "every job removed at once: nothing left"
echo "PASS"
