#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A path per class (lanes.toml egress_device / vlan / route_table): the node has
# two uplinks to the peer, the fabric ($DEV) and a bulk fabric (${P}u), and a
# VXLAN segment over the fabric. A training job's flows leave on the bulk uplink,
# an inference job's on the fabric, IPv4 and IPv6, shown by each uplink's byte
# counters; replies come back on the path taken. Lanes' table for a device holds
# the device's subnets and the class's egress_prefixes only: a job's flow to a
# destination outside both (the controller's network, 10.98.0.2 / fd98::2)
# leaves by the main table, on the fabric. A deleted rule or route is put back by
# the paths' converge; after the jobs end no rule, route, map element or table is
# left. A class whose device, VLAN or table is missing fails the job's apply with
# a message naming the key, and leaves nothing behind.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"
command -v iperf3 >/dev/null || fail "iperf3 not found"

BULK=${P}u
BULKPEER=${P}v
VX=${P}q
# bulk_link: the bulk NIC and its peer, up, with their addresses.
bulk_link() {
  $NA ip link add "$BULK" type veth peer name "$BULKPEER" netns ${P}b || fail "bulk veth"
  $NA ip link set "$BULK" up
  $NB ip link set "$BULKPEER" up
  $NA ip addr add 10.78.0.1/24 dev "$BULK"
  $NB ip addr add 10.78.0.2/24 dev "$BULKPEER"
  $NA ip -6 addr add fd78::1/64 dev "$BULK" nodad
  $NB ip -6 addr add fd78::2/64 dev "$BULKPEER" nodad
}
bulk_link
# A VXLAN segment over the fabric (VNI 42).
$NA ip link add "$VX" type vxlan id 42 local 10.77.0.1 remote 10.77.0.2 dstport 4789 dev "$DEV" || fail "vxlan"
$NB ip link add "$VX" type vxlan id 42 local 10.77.0.2 remote 10.77.0.1 dstport 4789 dev "$PEER" || fail "vxlan"
$NA ip link set "$VX" up
$NB ip link set "$VX" up
$NA ip addr add 10.79.0.1/24 dev "$VX"
$NB ip addr add 10.79.0.2/24 dev "$VX"
# The service the jobs talk to: 10.99.0.2 / fd99::2 on the peer, reached through
# the fabric by the main table; present on every uplink of the peer (each is one
# L2 segment with the node) so that a path's on-link prefix route finds it.
$NB ip addr add 10.99.0.2/32 dev lo
for d in "$PEER" "$BULKPEER" "$VX"; do $NB ip -6 addr add fd99::2/128 dev "$d" nodad; done
$NA ip route add 10.99.0.0/24 via 10.77.0.2 dev "$DEV"
$NA ip -6 route add fd99::/64 via fd77::2 dev "$DEV"
# The controller's network: 10.98.0.2 / fd98::2 on the peer, reached through the
# fabric by the main table and not in any class's egress_prefixes (the bulk
# fabric does not reach it: the peer has it on lo only).
$NB ip addr add 10.98.0.2/32 dev lo
$NB ip -6 addr add fd98::2/128 dev lo
$NA ip route add 10.98.0.0/24 via 10.77.0.2 dev "$DEV"
$NA ip -6 route add fd98::/64 via fd77::2 dev "$DEV"

CONF=$STATE_ROOT/lanes.toml
cat >"$CONF" <<TOML
default_class = "inference"
[classes.inference]
dscp = "AF41"
rate = "100Mbit"
ceil = "10Gbit"
[classes.training]
dscp = "CS1"
rate = "100Mbit"
ceil = "10Gbit"
egress_device = "$BULK"
egress_prefixes = ["10.99.0.0/24", "fd99::/64"]
[classes.segment]
dscp = "CS1"
rate = "100Mbit"
ceil = "10Gbit"
egress_device = "$VX"
egress_prefixes = ["10.99.0.0/24"]
[nodes]
state_dir = "$STATE"
cgroup_root = "$CGROOT"
[[nodes.nic]]
device = "$DEV"
link_speed = "$((SPEED / 1000000))Mbit"
TOML
LANESCTL=$BUILDDIR/lanesctl/lanesctl
[ -x "$LANESCTL" ] || fail "$LANESCTL not built"
lanesctl() { $NA "$LANESCTL" --config "$1" "${@:2}"; }
out=$(lanesctl "$CONF" check --node testnode 2>&1) || fail "lanesctl check --node: $out"
echo "$out" | grep -qF "path: class training: egress_device $BULK: its subnets and egress_prefixes 10.99.0.0/24, fd99::/64; other destinations by the main table" ||
  fail "lanesctl check does not show the path's prefixes: $out"

ptool() { tool --config "$CONF" "$@"; }
# tx_bytes DEV: bytes sent on DEV in ${P}a.
tx_bytes() { $NA ip -j -s link show dev "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])'; }
rules() { $NA ip "$1" rule show pref 14000; }

ptool apply 11 --class training --rate 100Mbit --ceil 10Gbit --dscp CS1 >"$STATE_ROOT/apply11" ||
  fail "apply training job: $(cat "$STATE_ROOT/apply11")"
grep -q "^path $BULK (table 0x4c4e" "$STATE_ROOT/apply11" || fail "no path in: $(cat "$STATE_ROOT/apply11")"
ptool apply 12 --class inference --rate 100Mbit --ceil 10Gbit --dscp AF41 >/dev/null || fail "apply inference job"
ptool apply 13 --class training --rate 100Mbit --ceil 10Gbit --dscp CS1 >/dev/null || fail "apply second training job"
[ "$(rules -4 | wc -l)" -eq 1 ] || fail "IPv4 rules: $(rules -4)"
[ "$(rules -6 | wc -l)" -eq 1 ] || fail "IPv6 rules: $(rules -6)"
rules -4 | grep -q "fwmark 0x4c4e[0-9a-f]* lookup" || fail "rule: $(rules -4)"
TABLE=$(rules -4 | sed -n 's/.* lookup \([0-9a-fx]*\).*/\1/p')
# The device's subnet and the class's egress_prefixes, on-link with the
# device's address as source; no default route.
$NA ip route show table "$TABLE" | grep -q "^10.78.0.0/24 dev $BULK .*scope link src 10.78.0.1" ||
  fail "table $TABLE: $($NA ip route show table "$TABLE")"
$NA ip route show table "$TABLE" | grep -q "^10.99.0.0/24 dev $BULK .*scope link src 10.78.0.1" ||
  fail "table $TABLE: $($NA ip route show table "$TABLE")"
$NA ip -6 route show table "$TABLE" | grep -q "^fd78::/64 dev $BULK .*src fd78::1" ||
  fail "IPv6 table $TABLE: $($NA ip -6 route show table "$TABLE")"
$NA ip -6 route show table "$TABLE" | grep -q "^fd99::/64 dev $BULK .*src fd78::1" ||
  fail "IPv6 table $TABLE: $($NA ip -6 route show table "$TABLE")"
$NA ip route show table "$TABLE" | grep -q default && fail "a default route in $TABLE: $($NA ip route show table "$TABLE")"
$NA ip -6 route show table "$TABLE" | grep -q default && fail "an IPv6 default route in $TABLE"

# flow JOB FAMILY PORT: 2 s of 20 Mbit/s TCP from the job to the service.
flow() {
  start_server "$3"
  if [ "$2" = 4 ]; then dst=${DST4:-10.99.0.2}; else dst=${DST6:-fd99::2}; fi
  tool run "$1" -- timeout 20 iperf3 "-$2" -c "$dst" -p "$3" -t 2 -b 20M >"$STATE_ROOT/iperf$3" 2>&1 ||
    fail "job $1 IPv$2 flow: $(tail -3 "$STATE_ROOT/iperf$3")"
}
# on_uplink WHAT JOB FAMILY PORT EXPECT_DEV OTHER_DEV: the flow's bytes leave on
# EXPECT_DEV (> 4 MB: 2 s at 20 Mbit/s is 5 MB), not on OTHER_DEV (< 1 MB).
on_uplink() {
  a0=$(tx_bytes "$5"); b0=$(tx_bytes "$6")
  flow "$2" "$3" "$4"
  a=$(( $(tx_bytes "$5") - a0 )); b=$(( $(tx_bytes "$6") - b0 ))
  echo "$1 IPv$3: $a bytes on $5, $b bytes on $6"
  [ "$a" -gt 4000000 ] || fail "$1 IPv$3: only $a bytes left on $5"
  [ "$b" -lt 1000000 ] || fail "$1 IPv$3: $b bytes left on $6"
}
on_uplink training 11 4 5401 "$BULK" "$DEV"
on_uplink training 11 6 5402 "$BULK" "$DEV"
on_uplink inference 12 4 5403 "$DEV" "$BULK"
on_uplink inference 12 6 5404 "$DEV" "$BULK"
# A destination outside the bulk device's subnets and the class's
# egress_prefixes (slurmctld's network, which the bulk fabric does not reach):
# a miss in the class's table, so the rule lookup goes on to the main table and
# the training job's flow leaves on the fabric.
DST4=10.98.0.2 DST6=fd98::2 on_uplink "training to the controller" 11 4 5409 "$DEV" "$BULK"
DST4=10.98.0.2 DST6=fd98::2 on_uplink "training to the controller" 11 6 5410 "$DEV" "$BULK"
# The replies came back on the bulk fabric: the peer saw the node's bulk address.
$NB ip -j -s link show dev "$BULKPEER" >/dev/null

# lanesctl status names each job's path.
out=$(lanesctl "$CONF" status --node testnode) || fail "lanesctl status: $out"
echo "$out" | grep -q "^path: JobId=11 training: $BULK (table 0x4c4e" || fail "status: $out"
echo "$out" | grep -q "^path: JobId=12" && fail "status: inference has no path: $out"
lanesctl "$CONF" status --node testnode --json | python3 -c '
import json, sys
jobs = {j["job_id"]: j for j in json.load(sys.stdin)["jobs"]}
assert jobs[11]["path"]["device"] == sys.argv[1] and jobs[11]["path"]["src4"] == "10.78.0.1", jobs[11]
assert {"dst": "10.99.0.0/24", "src": "10.78.0.1"} in jobs[11]["path"]["routes"], jobs[11]
assert "0.0.0.0/0" not in [r["dst"] for r in jobs[11]["path"]["routes"]], jobs[11]
assert "path" not in jobs[12], jobs[12]
' "$BULK" || fail "status --json"

# lanesctl reconcile puts back a deleted rule.
$NA ip -6 rule del pref 14000 || fail "ip -6 rule del"
out=$(lanesctl "$CONF" reconcile --node testnode) || fail "lanesctl reconcile: $out"
echo "$out" | grep -q "reapplied: path: ip rule fwmark .*(IPv6): added" || fail "reconcile: $out"
[ "$(rules -6 | wc -l)" -eq 1 ] || fail "reconcile did not put the IPv6 rule back"

# lanes-agent puts back a deleted rule and route by itself, woken by the
# kernel's rule and route notifications: resync_interval at an hour, so its
# periodic resync cannot be what repairs them.
AGENT=$BUILDDIR/agent/lanes-agent
[ -x "$AGENT" ] || fail "$AGENT not built"
sed "s|^\[nodes\]|[agent]\ntextfile_dir = \"$STATE_ROOT\"\nresync_interval = \"1h\"\n[nodes]|" "$CONF" >"$STATE_ROOT/agent.toml"
$NA "$AGENT" --config "$STATE_ROOT/agent.toml" --node testnode 2>>"$STATE_ROOT/agent.log" &
AGENT_PID=$!
STARTED_PIDS="$STARTED_PIDS $AGENT_PID"
sleep 1  # the agent's first converge
$NA ip -4 rule del pref 14000 || fail "ip rule del (agent)"
for _ in $(seq 200); do [ "$(rules -4 | wc -l)" -eq 1 ] && break; sleep 0.1; done
[ "$(rules -4 | wc -l)" -eq 1 ] || fail "lanes-agent did not put the rule back: $(tail -5 "$STATE_ROOT/agent.log")"
grep -q "repaired path: ip rule fwmark .*(IPv4): added (event)" "$STATE_ROOT/agent.log" ||
  fail "the agent did not log the repair on an event: $(tail -5 "$STATE_ROOT/agent.log")"
$NA ip -6 route flush table "$TABLE" || fail "ip -6 route flush (agent)"
for _ in $(seq 200); do $NA ip -6 route show table "$TABLE" | grep -q "^fd99::/64" && break; sleep 0.1; done
$NA ip -6 route show table "$TABLE" | grep -q "^fd99::/64 dev $BULK" ||
  fail "lanes-agent did not put the route back: $(tail -5 "$STATE_ROOT/agent.log")"
stop_pid "$AGENT_PID" || fail "lanes-agent exit $? on SIGTERM: $(tail -5 "$STATE_ROOT/agent.log")"
echo "lanes-agent put the deleted rule and route back on the kernel's events"

# A deleted rule and routes are put back by the paths' converge; a default
# route someone added to Lanes' table goes (it would take the job's controller
# traffic to the bulk fabric).
$NA ip -4 rule del pref 14000 || fail "ip rule del"
$NA ip -6 route flush table "$TABLE"
$NA ip route del 10.99.0.0/24 table "$TABLE" || fail "ip route del 10.99.0.0/24"
$NA ip route add default dev "$BULK" table "$TABLE" || fail "ip route add default"
out=$(ptool paths-converge) || fail "paths-converge: $out"
echo "$out"
echo "$out" | grep -q "ip rule fwmark .*(IPv4): added" || fail "the deleted rule was not reported"
echo "$out" | grep -q "route 10.99.0.0/24 dev $BULK src 10.78.0.1 table 0x4c4e[0-9a-f]*: added" ||
  fail "the deleted prefix route was not reported"
echo "$out" | grep -q "route 0.0.0.0/0 dev $BULK src  table 0x4c4e[0-9a-f]*: not wanted, deleted" ||
  fail "the foreign default route was not reported"
[ "$(rules -4 | wc -l)" -eq 1 ] || fail "the deleted rule is not back"
$NA ip -6 route show table "$TABLE" | grep -q "^fd99::/64 dev $BULK" || fail "the flushed route is not back"
$NA ip route show table "$TABLE" | grep -q "^10.99.0.0/24 dev $BULK" || fail "the deleted route is not back"
$NA ip route show table "$TABLE" | grep -q default && fail "the foreign default route is still in $TABLE"
[ "$(ptool paths-converge | tail -1)" = "path repairs 0" ] || fail "a second converge still repairs"

# Damage to the lanes_paths chains (a firewall reload, an admin's nft) is put
# back by the same converge, and the jobs' map elements stay: a deleted chain,
# a flushed one, a rule added to one, a chain that is not Lanes'.
marks() { $NA nft list map inet lanes_paths marks | grep -o '[0-9a-f]*:[0-9a-f]* : 0x4c4e[0-9a-f]*' | sort; }
marks_before=$(marks)
$NA nft delete chain inet lanes_paths post || fail "nft delete chain"
$NA nft flush chain inet lanes_paths out || fail "nft flush chain"
$NA nft add rule inet lanes_paths done counter || fail "nft add rule"
$NA nft add chain inet lanes_paths mine || fail "nft add chain"
out=$(ptool paths-converge) || fail "paths-converge (chains): $out"
echo "$out"
echo "$out" | grep -q "nft table inet lanes_paths: chain out has 0 rules instead of Lanes' one, chain post missing, chain done has 2 rules instead of Lanes' one, chain mine is not Lanes', rewritten" ||
  fail "the damage was not reported: $out"
listing=$($NA nft list table inet lanes_paths)
for want in "meta priority map @marks" "masquerade" "meta mark set 0x4c4e0000"; do
  [ "$(grep -c -- "$want" <<<"$listing")" -eq 1 ] || fail "after the repair, not one \"$want\": $listing"
done
grep -q "chain mine" <<<"$listing" && fail "the chain that is not Lanes' stayed: $listing"
grep -q "counter" <<<"$listing" && fail "the rule added to chain done stayed: $listing"
[ "$(marks)" = "$marks_before" ] || fail "the map's elements changed: $(marks) (were $marks_before)"
[ "$(ptool paths-converge | tail -1)" = "path repairs 0" ] || fail "a second converge still repairs (chains)"
on_uplink "training after the chains' repair" 11 4 5405 "$BULK" "$DEV"

# A job whose state went without its epilog (slurmd's start-up reconcile):
# the next converge drops its path record, and the rules of its class when it
# was the class's last job.
ptool apply 15 --class segment --rate 100Mbit --ceil 10Gbit --dscp CS1 >/dev/null || fail "apply 15"
[ "$(rules -4 | wc -l)" -eq 2 ] || fail "no rule for the segment class: $(rules -4)"
tool gc 11 12 13 >/dev/null || fail "shaper gc"
[ -e "$STATE/job_15" ] && fail "the shaper's gc left job 15's state"
out=$(ptool paths-converge) || fail "paths-converge: $out"
echo "$out" | grep -q "JobId=15: path record of an ended job, removed" || fail "converge kept job 15's path: $out"
[ "$(rules -4 | wc -l)" -eq 1 ] || fail "the segment class's rule outlived its job: $(rules -4)"

# One training job ends: the class's rules stay for the other.
ptool remove 11 || fail "remove 11"
[ "$(rules -4 | wc -l)" -eq 1 ] || fail "rules went with the first of two jobs"
on_uplink training 13 4 5405 "$BULK" "$DEV"

# The bulk NIC deleted and made again (a driver reload, a VF reset): its routes
# in the path's table went with the old device; converge puts them on the new
# one (same name, new index), and job 13's traffic takes the path again.
$NA ip link del "$BULK" || fail "ip link del $BULK"
bulk_link
$NB ip -6 addr add fd99::2/128 dev "$BULKPEER" nodad
out=$(ptool paths-converge 2>&1) || fail "paths-converge after $BULK was made again: $out"
echo "$out"
echo "$out" | grep -q "path device $BULK of JobId=13: made again (ifindex [0-9]* -> [0-9]*), its routes follow it" ||
  fail "converge did not follow the new $BULK: $out"
$NA ip route show table "$TABLE" | grep -q "^10.99.0.0/24 dev $BULK .*src 10.78.0.1" ||
  fail "table $TABLE after $BULK was made again: $($NA ip route show table "$TABLE")"
[ "$(ptool paths-converge | tail -1)" = "path repairs 0" ] || fail "a second converge still repairs (new $BULK)"
on_uplink "training after $BULK was made again" 13 4 5407 "$BULK" "$DEV"

# The VXLAN segment as a path.
ptool apply 14 --class segment --rate 100Mbit --ceil 10Gbit --dscp CS1 >/dev/null || fail "apply segment job"
on_uplink segment 14 4 5406 "$VX" "$BULK"
[ "$(rules -4 | wc -l)" -eq 2 ] || fail "two classes on paths, rules: $(rules -4)"
# The segment's device goes away while its job runs: converging and launching
# jobs of the other class go on.
$NA ip link del "$VX"
out=$(ptool paths-converge 2>&1) || fail "paths-converge with a path's device gone: $out"
ptool apply 16 --class training --rate 100Mbit --ceil 10Gbit --dscp CS1 >/dev/null ||
  fail "a training job's launch failed because another class's device is gone"
ptool remove 16 || fail "remove 16"

# Teardown: nothing left.
ptool remove 13 || fail "remove 13"
ptool remove 14 || fail "remove 14"
ptool remove 12 || fail "remove 12"
[ -z "$(rules -4)$(rules -6)" ] || fail "rules left: $(rules -4) $(rules -6)"
[ -z "$($NA ip route show table "$TABLE" 2>/dev/null)" ] || fail "routes left in $TABLE"
[ -z "$($NA ip -6 route show table "$TABLE" 2>/dev/null)" ] || fail "IPv6 routes left in $TABLE"
$NA nft list table inet lanes_paths >/dev/null 2>&1 && fail "table inet lanes_paths left"
[ -z "$(ls "$STATE/paths" | grep job_)" ] || fail "path records left: $(ls "$STATE/paths")"

# Bad config: a device, VLAN or table that does not exist fails the apply with
# the key named, and nothing of the job is left.
bad() {
  name=$1; shift
  printf 'default_class = "x"\n[classes.x]\ndscp = "CS1"\nrate = "100Mbit"\n%s\n' "$(printf '%s\n' "$@")" >"$STATE_ROOT/bad.toml"
  if tool --config "$STATE_ROOT/bad.toml" apply 20 --class x --rate 100Mbit --dscp CS1 >"$STATE_ROOT/bad.out" 2>&1; then
    fail "$name: apply succeeded"
  fi
  echo "$name: $(cat "$STATE_ROOT/bad.out")"
  grep -q "$EXPECT" "$STATE_ROOT/bad.out" || fail "$name: no '$EXPECT' in the message"
  [ -z "$(rules -4)" ] || fail "$name: a rule is left"
  [ -e "$STATE/job_20" ] && fail "$name: the job's state is left"
  return 0
}
EXPECT='classes.x.egress_device: "nosuch0": no such interface' bad "missing device" 'egress_device = "nosuch0"'
EXPECT='classes.x.vlan: the VLAN interface "'$BULK'.7": no such interface' bad "missing VLAN" "egress_device = \"$BULK\"" 'vlan = 7'
EXPECT='classes.x.route_table: table 4242 has no routes on this node' bad "empty table" 'route_table = 4242'
EXPECT='bad.toml:6:33: classes.x.egress_prefixes\[1\]: not a CIDR: host bits set past /24 (did you mean "10.99.0.0/24"?)' \
  bad "bad CIDR" "egress_device = \"$BULK\"" 'egress_prefixes = ["fd99::/64", "10.99.0.1/24"]'
EXPECT='bad.toml:6:19: classes.x.egress_prefixes: needs "egress_device"' \
  bad "egress_prefixes without egress_device" 'route_table = 4243' 'egress_prefixes = ["10.99.0.0/24"]'
# With classify_failure = "warn" the job runs on the default path, and says so.
printf 'default_class = "x"\n[classes.x]\ndscp = "CS1"\nrate = "100Mbit"\negress_device = "nosuch0"\n[nodes]\nclassify_failure = "warn"\n' >"$STATE_ROOT/warn.toml"
out=$(tool --config "$STATE_ROOT/warn.toml" apply 25 --class x --rate 100Mbit --dscp CS1 2>&1) ||
  fail "classify_failure = warn: the apply failed: $out"
echo "$out" | grep -q 'warning: classes.x.egress_device: "nosuch0": no such interface.*takes the default path' ||
  fail "classify_failure = warn: no warning: $out"
[ -z "$(rules -4)" ] || fail "classify_failure = warn: a rule: $(rules -4)"
tool remove 25 || fail "remove 25"
# lanesctl check on the node names the same key.
cat "$CONF" >"$STATE_ROOT/check.toml"
printf '[classes.gone]\ndscp = "CS1"\nrate = "100Mbit"\negress_device = "nosuch0"\n' >>"$STATE_ROOT/check.toml"
out=$(lanesctl "$STATE_ROOT/check.toml" check --node testnode 2>&1) && fail "lanesctl check passed a missing device: $out"
echo "$out" | grep -q 'classes.gone.egress_device: "nosuch0": no such interface' || fail "lanesctl check: $out"
EXPECT='classes.x.route_table: table "nosuchtable" is not in /etc/iproute2/rt_tables' bad "unknown table name" 'route_table = "nosuchtable"'

# 802.1Q, where the kernel has it (some CI kernels have no 8021q): a VLAN of
# another id under the expected name is refused, the right one is taken.
if $NA ip link add link "$BULK" name "$BULK.8" type vlan id 9 2>/dev/null; then
  EXPECT='classes.x.vlan: "'$BULK'.8" is not VLAN 8' bad "wrong VLAN" "egress_device = \"$BULK\"" 'vlan = 8'
  $NA ip link del "$BULK.8"
  $NA ip link add link "$BULK" name "$BULK.8" type vlan id 8
  $NA ip link set "$BULK.8" up
  $NA ip addr add 10.80.0.1/24 dev "$BULK.8"
  printf 'default_class = "x"\n[classes.x]\ndscp = "CS1"\nrate = "100Mbit"\negress_device = "%s"\nvlan = 8\n' "$BULK" >"$STATE_ROOT/vlan.toml"
  tool --config "$STATE_ROOT/vlan.toml" apply 21 --class x --rate 100Mbit --dscp CS1 | grep -q "^path $BULK.8 " ||
    fail "VLAN path not taken"
  tool --config "$STATE_ROOT/vlan.toml" remove 21 || fail "remove 21"
else
  echo "no 802.1Q in this kernel: the VLAN checks beyond a missing one are skipped"
fi

# A table of the admin's: used, never touched.
$NA ip route add default via 10.78.0.2 dev "$BULK" table 4243
printf 'default_class = "x"\n[classes.x]\ndscp = "CS1"\nrate = "100Mbit"\nroute_table = 4243\n' >"$STATE_ROOT/table.toml"
tool --config "$STATE_ROOT/table.toml" apply 22 --class x --rate 100Mbit --dscp CS1 | grep -q "^path table 4243" ||
  fail "table path not taken"
rules -4 | grep -q "lookup 4243" || fail "no rule to table 4243: $(rules -4)"
on_uplink table 22 4 5407 "$BULK" "$DEV"
tool --config "$STATE_ROOT/table.toml" remove 22 || fail "remove 22"
[ -z "$(rules -4)$(rules -6)" ] || fail "rules left after the table path"
$NA ip route show table 4243 | grep -q default || fail "the admin's table was touched"

# [[nodes.nic]] that put the bulk NIC on other nodes only: here the class
# takes the default path (no rule, its flow on the fabric).
cat "$CONF" >"$STATE_ROOT/elsewhere.toml"
printf '[[nodes.nic]]\nnodes = "other[1-2]"\ndevice = "%s"\n' "$BULK" >>"$STATE_ROOT/elsewhere.toml"
out=$(tool --config "$STATE_ROOT/elsewhere.toml" apply 24 --class training --rate 100Mbit --ceil 10Gbit --dscp CS1) ||
  fail "apply 24: $out"
echo "$out" | grep -q "^path" && fail "a path taken on a node [[nodes.nic]] leaves out: $out"
[ -z "$(rules -4)" ] || fail "a rule on a node without the bulk NIC: $(rules -4)"
on_uplink "training (bulk NIC elsewhere)" 24 4 5408 "$DEV" "$BULK"
tool --config "$STATE_ROOT/elsewhere.toml" remove 24 || fail "remove 24"

# lanesctl gc --all takes the paths with everything else.
ptool apply 23 --class training --rate 100Mbit --ceil 10Gbit --dscp CS1 >/dev/null || fail "apply 23"
[ "$(rules -4 | wc -l)" -eq 1 ] || fail "no rule for job 23"
lanesctl "$CONF" gc --all --node testnode >/dev/null || fail "lanesctl gc --all"
[ -z "$(rules -4)$(rules -6)" ] || fail "rules left after gc --all: $(rules -4)"
$NA nft list table inet lanes_paths >/dev/null 2>&1 && fail "table inet lanes_paths left after gc --all"
echo "PASS"
