#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# (#19.1/#19.2) One desired state per job, one reconciler: `lanesctl reconcile`
# (what lanes-reconcile.timer runs) and NodeShaper::converge() bring the kernel
# back to every running job's state file, repair exactly what differs, report
# the object and the cause, and do nothing the second time:
#   1. `nft flush ruleset` mid-job: marks and caps come back (the job's DSCP on
#      the wire, its HTB class counting its packets again);
#   2. a class changed by hand (`tc class change ... ceil`) and the root qdisc
#      deleted: repaired and reported as such;
#   3. a ceil shift (lanes-agent's set_ceils) survives reapply and reconcile;
#   4. root_handle changed in lanes.toml with a job running: the shift reaches
#      the job's own class (its root), not one under the new root;
#   5. a NIC down at the prolog, up later: the job is shaped on it at the
#      prolog (tc keeps a down device's classes), with no pending NIC and
#      nothing for converge to do at link up; every managed NIC down at a
#      prolog: the job is shaped on all of them (it used to fail the prolog).
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"
command -v tcpdump >/dev/null || fail "tcpdump not found"
command -v python3 >/dev/null || fail "python3 not found"
LANESCTL=$BUILDDIR/lanesctl/lanesctl
[ -x "$LANESCTL" ] || fail "$LANESCTL not built"
CFG=$STATE_ROOT/lanes.toml
cat >"$CFG" <<TOML
default_class = "training"
[classes.training]
rate = "10Mbit"
[nodes]
state_dir = "$STATE"
cgroup_root = "$CGROOT"
[[nodes.nic]]
nodes = "*"
device = "$DEV"
link_speed = "$((SPEED / 1000000))Mbit"
TOML
reconcile() { $NA "$LANESCTL" --config "$CFG" reconcile --node testnode "$@"; }
FILTER='udp dst portrange 5600-5699'
marked() { pcap_count "udp dst port $1 and (ip[1] & 0xfc) = 0x88"; }  # PORT -> packets with AF41
class_packets() { tool counters "$1" | awk -v d="${2:-$DEV}" '$1 == d {print $3}'; }  # JOB [DEV]
ceil_of() {  # DEV CLASSID -> the ceil tc reports ("" when the class is absent)
  $NA tc class show dev "$1" classid "$2" | grep -o 'ceil [0-9.]*[KMG]*bit' | awk '{print $2}'
}

tool apply 41 --rate 10Mbit --ceil 50Mbit --dscp AF41 >/dev/null || fail "apply 41"
m41=$(tool list | awk '$1 == 41 {print $3}')
out=$(reconcile) || fail "reconcile with everything in place: $out"
echo "$out" | grep -q "nothing to reapply" || fail "reconcile with everything in place: $out"

# ---- 1. nft flush ruleset mid-job, then the timer's command.
$NA nft flush ruleset || fail "nft flush ruleset"
capture_start flushed "$FILTER"
tool run 41 -- $SEND 4 5601 || fail "send in job 41"
capture_stop
[ "$(marked 5601)" -eq 0 ] || fail "job 41 still marked after the flush?"
before=$(class_packets 41)
out=$(reconcile) || fail "reconcile after the flush: $out"
echo "$out"
echo "$out" | grep -q "reapplied: nft_table missing" || fail "reconcile did not report the nft table: $out"
capture_start reconciled "$FILTER"
tool run 41 -- $SEND 4 5602 || fail "send in job 41"
capture_stop
n=$(marked 5602)
echo "job 41 after reconcile: $n/20 packets AF41"
[ "$n" -eq 20 ] || fail "job 41 not re-marked by reconcile ($n/20)"
after=$(class_packets 41)
[ "$after" -ge $((before + 20)) ] || fail "job 41's packets do not reach its HTB class again ($before -> $after)"
out=$(reconcile) || fail "second reconcile: $out"
echo "$out" | grep -q "nothing to reapply" || fail "second reconcile repaired again: $out"

# ---- 2. a class changed by hand; the root qdisc deleted.
$NA tc class change dev "$DEV" parent 1a4e:1 classid "1a4e:$m41" htb rate 10Mbit ceil 900Mbit \
  || fail "tc class change"
[ "$(ceil_of "$DEV" "1a4e:$m41")" = 900Mbit ] || fail "tc class change did not take"
out=$(tool converge) || fail "converge after tc class change: $out"
echo "$out"
echo "$out" | grep -qx "class changed 41 $DEV" || fail "converge did not report the changed class: $out"
[ "$(ceil_of "$DEV" "1a4e:$m41")" = 50Mbit ] || fail "ceil not repaired: $(ceil_of "$DEV" "1a4e:$m41")"
echo "$out" | grep -qx "repairs 1 jobs 1" || fail "converge repaired more than the class: $out"
$NA tc qdisc del dev "$DEV" root || fail "tc qdisc del"
out=$(reconcile) || fail "reconcile after tc qdisc del: $out"
echo "$out"
echo "$out" | grep -q "reapplied: root_qdisc missing on $DEV" || fail "root qdisc repair not reported: $out"
echo "$out" | grep -q "reapplied: class missing JobId=41 on $DEV" || fail "class repair not reported: $out"
[ "$(ceil_of "$DEV" "1a4e:$m41")" = 50Mbit ] || fail "class of job 41 not back"
$NA tc qdisc show dev "$DEV" | grep -q "parent 1a4e:$m41" || fail "leaf qdisc of job 41 not back"
out=$(tool converge) || fail "converge: $out"
echo "$out" | grep -qx "repairs 0 jobs 1" || fail "converge after reconcile not a no-op: $out"

# ---- 3. a ceil shift (the agent's call) is desired state: reapply keeps it.
tool set-ceil 41 "$DEV" 20Mbit "window busy: test" || fail "set-ceil"
[ "$(ceil_of "$DEV" "1a4e:$m41")" = 20Mbit ] || fail "shift not applied: $(ceil_of "$DEV" "1a4e:$m41")"
grep -q "^ceil_cause=window busy: test$" "$STATE/job_41" || fail "no ceil_cause in the state: $(cat "$STATE/job_41")"
$NA tc qdisc del dev "$DEV" root || fail "tc qdisc del"
out=$(tool reapply) || fail "reapply: $out"
[ "$(ceil_of "$DEV" "1a4e:$m41")" = 20Mbit ] || fail "reapply rebuilt the normal ceil: $(ceil_of "$DEV" "1a4e:$m41")"
$NA tc class change dev "$DEV" parent 1a4e:1 classid "1a4e:$m41" htb rate 10Mbit ceil 50Mbit || fail "tc class change"
out=$(reconcile) || fail "reconcile: $out"
echo "$out" | grep -q "reapplied: class changed JobId=41" || fail "reconcile kept the normal ceil: $out"
[ "$(ceil_of "$DEV" "1a4e:$m41")" = 20Mbit ] || fail "busy ceil not restored: $(ceil_of "$DEV" "1a4e:$m41")"
tool set-ceil 41 "$DEV" 50Mbit "window idle" || fail "set-ceil back"
[ "$(ceil_of "$DEV" "1a4e:$m41")" = 50Mbit ] || fail "normal ceil not back"
grep -q "^ceil_cause=" "$STATE/job_41" && fail "ceil_cause kept after the shift ended"

# ---- 4. root_handle changed while job 41 runs: the shift reaches 1a4e:, its root.
new() { $NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" --major 1b00 "$@"; }
new set-ceil 41 "$DEV" 30Mbit "window busy" || fail "set-ceil with the new root_handle"
[ "$(ceil_of "$DEV" "1a4e:$m41")" = 30Mbit ] || fail "shift missed job 41's class 1a4e:$m41"
$NA tc class show dev "$DEV" | grep -q "1b00:" && fail "a class under the new root appeared: $($NA tc class show dev "$DEV")"
out=$(new converge) || fail "converge with the new root_handle: $out"
echo "$out" | grep -qx "repairs 0 jobs 1" || fail "converge with the new root_handle changed something: $out"
new set-ceil 41 "$DEV" 50Mbit "window idle" >/dev/null || fail "set-ceil back"

# ---- 5. a NIC down at the prolog, up later.
DEV2=${P}z
PEER2=${P}w
ip link add "$DEV2" netns ${P}a type veth peer name "$PEER2" netns ${P}b || fail "second veth"
$NA ip addr add 10.79.0.1/24 dev "$DEV2"
$NB ip addr add 10.79.0.2/24 dev "$PEER2"
both() { $NA "$TOOL" --state "$STATE" --nic "${P}[xz]" --speed "$SPEED" --cgroup-root "$CGROOT" "$@"; }
both apply 42 --rate 10Mbit --ceil 40Mbit --dscp AF41 >/dev/null 2>"$STATE_ROOT/apply42.err" || fail "apply 42 with $DEV2 down"
grep -q "^pending_device=" "$STATE/job_42" && fail "a down NIC recorded pending: $(cat "$STATE/job_42")"
m42=$(tool list | awk '$1 == 42 {print $3}')
[ "$(ceil_of "$DEV2" "1a4e:$m42")" = 40Mbit ] || fail "job 42 has no class on the down $DEV2: $($NA tc class show dev "$DEV2")"
$NB ip link set "$PEER2" up
$NA ip link set "$DEV2" up
[ "$(ceil_of "$DEV2" "1a4e:$m42")" = 40Mbit ] || fail "job 42's class on $DEV2 gone at link up: $($NA tc class show dev "$DEV2")"
out=$(both converge) || fail "converge after link up: $out"
echo "$out"
echo "$out" | grep -qx "repairs 0 jobs 2" || fail "converge after link up had something to do: $out"
before=$(class_packets 42 "$DEV2")
cat >"$STATE_ROOT/send2.py" <<'PY'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(20):
    s.sendto(b"x" * 200, ("10.79.0.2", 5650))
PY
both run 42 -- python3 "$STATE_ROOT/send2.py" || fail "send in job 42"
after=$(class_packets 42 "$DEV2")
echo "job 42's class on $DEV2: $before -> $after packets"
[ "$after" -ge $((before + 20)) ] || fail "job 42's packets on $DEV2 miss its class ($before -> $after)"
# Epilogs: the last job's takes its classes on both NICs (the first one's is parked).
both remove 41 || fail "remove 41"
both remove 42 || fail "remove 42"
for d in "$DEV" "$DEV2"; do
  $NA tc class show dev "$d" | grep -Eq "1a4e:($m41|$m42) " && fail "a job's class left on $d: $($NA tc class show dev "$d")"
done

# Every managed NIC down at the prolog: shaped on both (the prolog used to fail,
# "no NIC of node ... can be shaped", and Slurm drained the node).
$NA ip link set "$DEV" down
$NA ip link set "$DEV2" down
both apply 43 --rate 10Mbit --ceil 30Mbit >/dev/null 2>"$STATE_ROOT/apply43.err" ||
  fail "apply 43 with every NIC down: $(cat "$STATE_ROOT/apply43.err")"
m43=$(tool list | awk '$1 == 43 {print $3}')
for d in "$DEV" "$DEV2"; do
  [ "$(ceil_of "$d" "1a4e:$m43")" = 30Mbit ] || fail "job 43 has no class on the down $d: $($NA tc class show dev "$d")"
done
$NA ip link set "$DEV" up
$NA ip link set "$DEV2" up
for d in "$DEV" "$DEV2"; do
  [ "$(ceil_of "$d" "1a4e:$m43")" = 30Mbit ] || fail "job 43's class on $d gone at link up"
done
out=$(both converge) || fail "converge after both links up: $out"
echo "$out" | grep -qx "repairs 0 jobs 1" || fail "converge after both links up had something to do: $out"
both remove 43 || fail "remove 43"
echo "down NICs shaped at the prolog, every NIC down included"
echo "PASS"
