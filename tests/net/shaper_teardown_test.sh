#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (4) Teardown leaves tc and nftables as they were: after the jobs are removed only
# Lanes' persistent root (htb 1a4e: + classes :1 and :fffe) and its empty base
# table remain; after remove-all, `tc qdisc/class show` and `nft list ruleset` are
# byte-for-byte what they were before. Also: remove after the cgroup dir vanished,
# gc of dead jobs, and a foreign root qdisc (refuse, then adopt).
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"

# Someone else's nftables table must survive everything we do.
$NA nft -f - <<'NFT' || fail "foreign nft table"
table inet other {
  chain c { type filter hook output priority 10; policy accept; counter; }
}
NFT
snap() {
  $NA tc qdisc show dev "$DEV"
  $NA tc class show dev "$DEV"
  $NA nft list ruleset | sed 's/counter packets [0-9]* bytes [0-9]*/counter/'
}
before=$(snap)
cg_before=$(ls "$CGROOT")

for j in 21 22 23; do tool apply $j --rate 20Mbit --dscp CS2 >/dev/null || fail "apply $j"; done
start_server 5301
tool run 22 -- timeout 20 iperf3 -c 10.77.0.2 -p 5301 -t 1 -b 5M >/dev/null || fail "iperf3 in job 22"
for j in 21 22 23; do tool remove $j || fail "remove $j"; done
tool remove 22 || fail "second remove of job 22 must succeed"
tool remove 99 || fail "remove of a job never applied must succeed"

classes=$($NA tc class show dev "$DEV" | sort)
[ "$(echo "$classes" | wc -l)" -eq 2 ] && echo "$classes" | grep -q "1a4e:1 root" && echo "$classes" | grep -q "1a4e:fffe" \
  || fail "classes left after removing the jobs: $classes"
[ "$($NA tc qdisc show dev "$DEV" | grep -c .)" -eq 1 ] || fail "leaf qdiscs left: $($NA tc qdisc show dev "$DEV")"
lanes=$($NA nft list table inet lanes)
echo "$lanes" | grep -q "chain job_" && fail "job chains left: $lanes"
echo "$lanes" | grep -q "elements" && fail "map elements left: $lanes"
[ "$(ls "$CGROOT")" = "$cg_before" ] || fail "cgroup dirs left: $(ls "$CGROOT")"
ls "$STATE" | grep -q -e '^job_' -e '^minor_' && fail "state files left: $(ls "$STATE")"

# The job's cgroup dir disappears before the epilog (Slurm's own dirs do): the
# map element goes by cgroup id, the chain with it.
tool apply 31 --rate 20Mbit >/dev/null || fail "apply 31"
rmdir "$CGROOT/job_31" || fail "rmdir job_31"
tool remove 31 || fail "remove 31 after its cgroup dir vanished"
lanes=$($NA nft list table inet lanes)
echo "$lanes" | grep -q -e "job_31" -e "elements" && fail "job 31 left in nft: $lanes"

# gc: jobs 41 and 43 are dead, 42 alive.
for j in 41 42 43; do tool apply $j --rate 10Mbit >/dev/null || fail "apply $j"; done
gc=$(tool gc 42) || fail "gc"
[ "$(echo "$gc" | tr '\n' ' ')" = "removed 41 removed 43 " ] || fail "gc removed: $gc"
[ "$(tool list | awk '{print $1}')" = "42" ] || fail "gc kept: $(tool list)"
tool remove 42 || fail "remove 42"

tool remove-all || fail "remove-all"
after=$(snap)
if [ "$before" != "$after" ]; then
  echo "--- before"; echo "$before"; echo "--- after"; echo "$after"
  fail "tc/nft state differs after remove-all"
fi
echo "tc and nft identical to before after remove-all"

# A foreign root qdisc: refused with a message naming the NIC and the qdisc ...
$NA tc qdisc add dev "$DEV" root handle 1: tbf rate 1gbit burst 32k latency 50ms || fail "tbf"
msg=$(tool apply 51 --rate 10Mbit 2>&1) && fail "apply over a foreign root must fail"
echo "refused: $msg"
echo "$msg" | grep -q "$DEV" && echo "$msg" | grep -q "tbf 1:0" || fail "message does not name NIC and qdisc"
ls "$STATE" | grep -q -e '^job_' -e '^minor_' && fail "refused apply left state: $(ls "$STATE")"
[ "$(ls "$CGROOT")" = "$cg_before" ] || fail "refused apply left a cgroup dir"
# ... or adopted when configured.
out=$($NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" --adopt apply 51 --rate 10Mbit 2>&1) \
  || fail "adopt: $out"
echo "adopt: $out"
$NA tc qdisc show dev "$DEV" | grep -q "qdisc htb 1a4e: root" || fail "root not adopted"
tool remove-all || fail "remove-all after adopt"
echo "PASS"
