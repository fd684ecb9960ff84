#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lanesctl status and gc on real kernel state, in a private network namespace:
# four jobs planted with NodeShaper (plant_state), traffic through one of them,
# then status (human, JSON, Prometheus), gc --dry-run, gc, reapply after
# `nft flush ruleset`, status of a state file holding hostile strings, gc --all.
# gc removes only what is proven gone (node_facts.hpp decide_liveness()): there
# is no slurm.conf and no slurmctld here, so every job nothing local decides is
# kept with "slurmctld cannot be asked" (lanesctl fails soft without Slurm).
#   101 training   shaped in an earlier boot, its process exited -> removed by gc
#   102 inference  "slurmstepd: [102.batch]" in the netns  -> kept
#   103 batch      a process in its cgroup                 -> kept
#   104 training   "slurmstepd: [104.batch]" in ANOTHER netns, no process here:
#                  an allocation with no step yet (salloc)  -> kept
set -u
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: $(basename "$0") needs root (network namespaces, tc, nftables, cgroup2)"
  exit 77
fi
for cmd in ip nsenter tc nft python3 promtool; do
  command -v "$cmd" >/dev/null || { echo "FAIL: $cmd not found"; exit 1; }
done
BUILDDIR=${LANES_BUILDDIR:-.}
SRCDIR=${LANES_SRCDIR:-.}
. "$SRCDIR/tests/net/nft_holds.sh"
LANESCTL=$BUILDDIR/lanesctl/lanesctl
PLANT=$BUILDDIR/tests/lanesctl/plant_state
[ -x "$LANESCTL" ] && [ -x "$PLANT" ] || { echo "FAIL: $LANESCTL or $PLANT not built"; exit 1; }

P=lc$$
NS=${P}a
PNS=${P}b
DEV=${P}x
PEER=${P}y
NA="nsenter --net=/run/netns/$NS"
CG2=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2") { print $5; exit } break } }' /proc/self/mountinfo)
[ -n "$CG2" ] || { echo "FAIL: no cgroup2 mount"; exit 1; }
CGROOT=$CG2/$P
TMP=$(mktemp -d /tmp/${P}-lanesctl.XXXXXX)
CFG=$TMP/lanes.toml
PIDS=""

cleanup() {
  for pid in $PIDS; do kill "$pid" 2>/dev/null; done
  for pid in $PIDS; do wait "$pid" 2>/dev/null; done
  [ -e /run/netns/$NS ] && $NA "$LANESCTL" --config "$CFG" gc --all >/dev/null 2>&1
  ip netns del $NS 2>/dev/null
  ip netns del $PNS 2>/dev/null
  if [ -d "$CGROOT" ]; then
    for d in "$CGROOT"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
    rmdir "$CGROOT" 2>/dev/null
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
# No Slurm here, whatever the environment says: gc cannot ask slurmctld.
ctl() { SLURM_CONF=$TMP/no-such-slurm.conf $NA "$LANESCTL" --config "$CFG" "$@"; }
# Fields of JSON on stdin: jq-like one-liners in python.
py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }

ip netns add $NS || fail "ip netns add"
ip netns add $PNS || fail "ip netns add"
ip link add "$DEV" netns $NS type veth peer name "$PEER" netns $PNS || fail "veth"
$NA ip link set lo up
$NA ip link set "$DEV" up
nsenter --net=/run/netns/$PNS ip link set "$PEER" up
$NA ip addr add 10.78.0.1/24 dev "$DEV"
nsenter --net=/run/netns/$PNS ip addr add 10.78.0.2/24 dev "$PEER"
mkdir -p "$CGROOT" "$TMP/state"
sed -e "s|@DEV@|$DEV|" -e "s|@STATE@|$TMP/state|" -e "s|@CGROOT@|$CGROOT|" \
  "$SRCDIR/tests/lanesctl/data/node.toml.in" >"$CFG"

ctl check >/dev/null || fail "check on the test config"
# Nothing yet: status works and says so.
out=$(ctl status) || fail "status on an empty node"
echo "$out" | grep -q "no jobs shaped" || fail "empty status: $out"

declare -A CG
for spec in 101:training 102:inference 103:batch 104:training; do
  id=${spec%%:*}
  boot=; [ "$id" = 101 ] && boot=earlier-boot
  CG[$id]=$($NA "$PLANT" "$CFG" testnode "$id" "${spec#*:}" $boot) || fail "plant job $id"
done

# Job 101: traffic from inside its cgroup, then it is gone.
$NA bash -c "echo \$\$ > '${CG[101]}/cgroup.procs' && exec python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(40):
    s.sendto(b\"x\" * 1000, (\"10.78.0.2\", 9))
'" || fail "UDP from job 101's cgroup"
# Job 102: a slurmstepd (by its process title) in this namespace.
$NA bash -c 'exec -a "slurmstepd: [102.batch]" sleep 120' &
PIDS="$PIDS $!"
# Job 103: a task in its cgroup.
$NA bash -c "echo \$\$ > '${CG[103]}/cgroup.procs' && exec sleep 120" &
PIDS="$PIDS $!"
# Job 104: a slurmstepd of that id, but in the host's namespace: not this node's.
bash -c 'exec -a "slurmstepd: [104.batch]" sleep 120' &
PIDS="$PIDS $!"
for _ in $(seq 50); do
  grep -q "^[0-9]" "${CG[103]}/cgroup.procs" 2>/dev/null && pgrep -f "slurmstepd: \[102.batch\]" >/dev/null && break
  sleep 0.1
done

# ---- status
json=$(ctl status --json) || fail "status --json"
echo "$json" | py "
ids = [j['job_id'] for j in d['jobs']]
assert ids == [101, 102, 103, 104], ids
j = {x['job_id']: x for x in d['jobs']}
assert j[101]['class'] == 'training' and j[101]['dscp'] == 'CS1' and j[102]['dscp'] == 'AF41', d
dev = j[101]['devices'][0]
assert dev['device'] == '$DEV', dev
assert dev['rate_bits'] == 100000000 and dev['ceil_bits'] == 400000000, dev
assert dev['packets'] >= 40 and dev['bytes'] >= 40 * 1000, dev
assert j[103]['devices'][0]['packets'] == 0, j[103]
assert d['nics'][0]['device'] == '$DEV', d['nics']
" || fail "status --json content: $json"
human=$(ctl status) || fail "status"
echo "$human" | grep -Eq "^101 +training +$DEV +100Mbit +400Mbit +CS1 " || fail "status human: $human"

prom=$TMP/lanes.prom
ctl status --prometheus "$prom" >"$TMP/prom.out" || fail "status --prometheus"
[ -s "$TMP/prom.out" ] && fail "status --prometheus printed: $(cat "$TMP/prom.out")"
node=$(sed -n 's/^lanes_jobs{node="\(.*\)"} [0-9]*$/\1/p' "$prom")
[ -n "$node" ] || fail "lanes_jobs has no node label: $(cat "$prom")"
# host: the node, on every per-job series (multi-node jobs, the join with DCGM).
grep -Eq "^lanes_job_bytes_total\{hpc_job=\"101\",class=\"training\",device=\"$DEV\",host=\"$node\",direction=\"egress\"\} [1-9][0-9]+$" "$prom" \
  || fail "prometheus bytes: $(cat "$prom")"
grep '^lanes_job_' "$prom" | grep -Ev "host=\"$node\",direction=\"(egress|ingress)\"\}" && fail "a per-job series without host=\"$node\""
promtool check metrics <"$prom" || fail "promtool check metrics: $(cat "$prom")"
grep -q '^# TYPE lanes_job_drops_total counter$' "$prom" || fail "prometheus TYPE line"
grep -q '^lanes_jobs{node="testnode"} 4$' "$prom" || grep -q '^lanes_jobs{node=' "$prom" || fail "lanes_jobs"
ls "$TMP" | grep -q 'lanes.prom.tmp' && fail "temporary prometheus file left"

# ---- gc --dry-run: reports, changes nothing
json=$(ctl gc --dry-run --json) || fail "gc --dry-run"
echo "$json" | py "
assert sorted(x['job_id'] for x in d['removed']) == [101], d
assert sorted(x['job_id'] for x in d['kept']) == [102, 103, 104], d
assert d['dry_run'] is True, d
" || fail "gc --dry-run content: $json"
[ "$(ctl status --json | py 'print(len(d["jobs"]))')" = 4 ] || fail "gc --dry-run removed something"

id101=$(cg_id "${CG[101]}")
nft_holds $NS "table inet lanes" "${CG[101]}" || fail "job 101 not marked before gc"
# ---- gc: the dead ones go, kernel objects included
out=$(ctl gc) || fail "gc: $out"
echo "$out" | grep -q "^removed job 101 (training): shaped in an earlier boot" || fail "gc output: $out"
echo "$out" | grep -q "^kept job 104 (training): no process on this node and slurmctld cannot be asked (.*): kept until slurmctld can say it ended" || fail "gc output: $out"
echo "$out" | grep -q "^kept job 102 (inference): slurmstepd pid" || fail "gc output: $out"
echo "$out" | grep -q "^kept job 103 (batch): cgroup .* has processes" || fail "gc output: $out"
[ "$(ctl status --json | py 'print([j["job_id"] for j in d["jobs"]])')" = "[102, 103, 104]" ] || fail "after gc"
# Jobs 102-104 still run, so 101's class is parked for the next job (nodes.parked_classes):
# the parked minimum, no nft element, listed as parked, not as a job.
$NA tc class show dev "$DEV" classid 1a4e:65 | grep -q "rate 8Kbit ceil 8Kbit" ||
  fail "tc class of job 101 neither gone nor parked: $($NA tc class show dev "$DEV" classid 1a4e:65)"
ctl status | grep -q "^parked classes .*: 1a4e:65 ($DEV)$" || fail "status does not list the parked class: $(ctl status)"
ctl status --json | py "assert d['parked'] == [{'class': '1a4e:65', 'devices': ['$DEV']}], d" ||
  fail "status --json parked: $(ctl status --json)"
ctl status --prometheus "$prom" && grep -q '^lanes_parked_classes{node=".*"} 1$' "$prom" ||
  fail "lanes_parked_classes: $(grep parked "$prom")"
nft_holds $NS "table inet lanes" "${CG[101]}" "$id101" && fail "nft chain of job 101 still there"
[ -e "$TMP/state/job_101" ] && fail "state file of job 101 still there"
nft_holds $NS "table inet lanes" "${CG[102]}" || fail "nft chain of job 102 removed"

# ---- reapply: after `nft flush ruleset` the running jobs' marks come back
out=$(ctl reapply) || fail "reapply with everything in place: $out"
echo "$out" | grep -q "nothing to reapply" || fail "reapply with everything in place: $out"
$NA nft flush ruleset || fail "nft flush ruleset"
ctl reapply --dry-run >"$TMP/dry.out" 2>&1
[ $? -eq 1 ] || fail "reapply --dry-run after a flush must exit 1: $(cat "$TMP/dry.out")"
grep -q "would reapply" "$TMP/dry.out" || fail "reapply --dry-run: $(cat "$TMP/dry.out")"
$NA nft list tables | grep -q "inet lanes" && fail "reapply --dry-run changed something"
json=$(ctl reapply --json) || fail "reapply: $json"
echo "$json" | py "
assert d['reapplied'] is True and d['jobs'] == 3, d
assert 'missing' in d['missing'] or 'marks' in d['missing'], d
" || fail "reapply --json: $json"
nft_holds $NS "table inet lanes" "${CG[102]}" || fail "job 102 not re-marked: $($NA nft list table inet lanes)"
nft_holds $NS "table inet lanes" "${CG[103]}" || fail "job 103 not re-marked"
nft_holds $NS "table inet lanes" "${CG[104]}" || fail "job 104 not re-marked"
out=$(ctl reapply) || fail "second reapply: $out"
echo "$out" | grep -q "nothing to reapply" || fail "second reapply: $out"

# ---- their processes end: still alive until their epilogs (which remove them)
for pid in $PIDS; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
PIDS=""
out=$(ctl gc) || fail "second gc: $out"
echo "$out" | grep -q "^removed" && fail "second gc removed a job before its epilog: $out"
[ "$(echo "$out" | grep -c "slurmctld cannot be asked")" = 3 ] || fail "second gc: $out"

# ---- hostile strings in a state file (job 106, a copy of 104 with another
# class): status escapes them for the terminal, keeps --json valid, and keeps
# the Prometheus textfile valid UTF-8 with no control byte.
hostile=$(printf 'evil\033[2J\377\302\233')
sed -e 's/^job_id=104$/job_id=106/' -e "s/^class=.*/class=$hostile/" "$TMP/state/job_104" >"$TMP/state/job_106" ||
  fail "write job 106's state"
inert() {
  python3 - "$1" <<'PY'
import sys
text = open(sys.argv[1], "rb").read().decode("utf-8")  # strict: invalid UTF-8 raises
bad = [hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
sys.exit(1 if bad else 0)
PY
}
ctl status >"$TMP/hostile.out" 2>&1
inert "$TMP/hostile.out" || fail "status prints raw control bytes: $(od -c "$TMP/hostile.out" | head)"
grep -qF 'evil\x1B[2J\xFF\x9B' "$TMP/hostile.out" || fail "status human: $(cat -v "$TMP/hostile.out")"
ctl status --parsable >"$TMP/hostile.out" 2>&1
inert "$TMP/hostile.out" || fail "status --parsable prints raw control bytes: $(cat -v "$TMP/hostile.out")"
ctl status --json >"$TMP/hostile.json" || fail "status --json with job 106"
inert "$TMP/hostile.json" || fail "status --json has raw control bytes: $(cat -v "$TMP/hostile.json")"
py "j = {x['job_id']: x for x in d['jobs']}; assert j[106]['class'] == 'evil\\x1b[2J\\ufffd\\x9b', j[106]" \
  <"$TMP/hostile.json" || fail "status --json class of job 106: $(cat -v "$TMP/hostile.json")"
ctl status --prometheus "$prom" || fail "status --prometheus with job 106"
inert "$prom" || fail "prometheus textfile has raw control bytes: $(cat -v "$prom")"
grep -qF "class=\"evil$(printf '\357\277\275')[2J$(printf '\357\277\275\357\277\275')\"" "$prom" ||
  fail "prometheus label of job 106: $(grep -a 106 "$prom" | cat -v)"
rm -f "$TMP/state/job_106"

# ---- gc --all: root qdisc and nft table go too
$NA "$PLANT" "$CFG" testnode 105 batch >/dev/null || fail "plant job 105"
out=$(ctl gc --all) || fail "gc --all: $out"
echo "$out" | grep -q "^removed job 105" || fail "gc --all: $out"
echo "$out" | grep -q "^removed lanes qdiscs on $DEV" || fail "gc --all: $out"
$NA tc qdisc show dev "$DEV" | grep -q "htb 1a4e:" && fail "root qdisc left after gc --all"
$NA nft list tables | grep -q "inet lanes" && fail "nft table left after gc --all"
ls "$TMP/state" | grep -q '^job_' && fail "state files left after gc --all"
[ -z "$(ls "$TMP/state/parked")" ] || fail "parked records left after gc --all: $(ls "$TMP/state/parked")"

# ---- runtime errors are exit 3
$NA "$LANESCTL" --config "$TMP/missing.toml" status >/dev/null 2>&1
[ $? -eq 3 ] || fail "status with a missing config: exit code"
echo "PASS: lanesctl status/gc"
