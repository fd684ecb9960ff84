#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# (#21 part 2) Per-job ingress caps: what arrives for a job is shaped on the
# NIC's IFB device (lanes-ifb<h>), in the job's own HTB class:
#   1. a storage namespace streams into job 41 (iperf3 -R from inside the job):
#      the job's IFB class counts the stream's bytes and its ceil in the kernel
#      is the job's ingress ceil; job 42 on the same NIC keeps its own class
#      (and none of 41's bytes); an IPv6 stream into job 42 is counted in 42's;
#   2. a deleted IFB class is put back by converge, and reported; an IFB or a
#      NIC deleted and made again gets chains bound to the new device (the
#      stream reaches job 41's class again);
#   3. teardown: 41's class goes, 42's stays; after 42 no IFB, no netdev
#      table, nothing of Lanes in nftables' ingress path; a NIC absent at a
#      job's prolog gets the job's ingress class once converge finds it;
#   4. bad config: ingress_ceil below ingress_rate names the key.
# The stream's settled rate is printed (ratio to the ceil), never asserted.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"
command -v iperf3 >/dev/null || fail "iperf3 not found"
LANESCTL=$BUILDDIR/lanesctl/lanesctl
[ -x "$LANESCTL" ] || fail "$LANESCTL not built"

ifb_of_dev() { $NA ip -o link show | grep -o 'lanes-ifb[0-9a-f]\{6\}' | sort -u; }
ifb_class() { $NA tc -s class show dev "$IFB" classid "1a4e:$1"; }        # MINOR (hex)
ifb_ceil() { ifb_class "$1" | grep -o 'ceil [0-9.]*[KMG]*bit' | awk '{print $2}'; }
ifb_bytes() { ifb_class "$1" | awk '/Sent/ {print $2; exit}'; }

tool apply 41 --rate 10Mbit --ceil 1Gbit --ingress-rate 10Mbit --ingress-ceil 50Mbit >/dev/null || fail "apply 41"
tool apply 42 --rate 10Mbit --ceil 1Gbit --ingress-rate 10Mbit --ingress-ceil 200Mbit >/dev/null || fail "apply 42"
m41=$(tool list | awk '$1 == 41 {print $3}')
m42=$(tool list | awk '$1 == 42 {print $3}')
IFB=$(ifb_of_dev)
[ -n "$IFB" ] && [ "$(echo "$IFB" | wc -l)" -eq 1 ] || fail "expected one lanes-ifb device, got: '$IFB'"
$NA ip -d link show "$IFB" | grep -q "alias lanes ingress of $DEV" || fail "$IFB has no alias naming $DEV"
[ "$(ifb_ceil "$m41")" = 50Mbit ] || fail "job 41's IFB class ceil: '$(ifb_ceil "$m41")', want 50Mbit"
[ "$(ifb_ceil "$m42")" = 200Mbit ] || fail "job 42's IFB class ceil: '$(ifb_ceil "$m42")', want 200Mbit"
$NA nft list set netdev lanes_in jobs | grep -q "1a4e:$m41" || fail "job 41 not in @jobs"

# ---- 1. a stream into job 41.
start_server 5401
before41=$(ifb_bytes "$m41")
before42=$(ifb_bytes "$m42")
tool run 41 -- timeout 30 iperf3 -c 10.77.0.2 -p 5401 -R -t 4 -J >"$STATE_ROOT/iperf.json" \
  || fail "iperf3 -R in job 41: $(tail -5 "$STATE_ROOT/iperf.json")"
received=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(int(j["end"]["sum_received"]["bytes"]))' "$STATE_ROOT/iperf.json")
bps=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(int(j["end"]["sum_received"]["bits_per_second"]))' "$STATE_ROOT/iperf.json")
got41=$(( $(ifb_bytes "$m41") - before41 ))
got42=$(( $(ifb_bytes "$m42") - before42 ))
echo "job 41 received $received bytes at $((bps / 1000)) kbit/s: $(python3 -c "print(round($bps / 50e6, 3))") of its 50Mbit ingress ceil"
echo "job 41's IFB class counted $got41 bytes, job 42's $got42"
[ "$received" -gt 1000000 ] || fail "the stream carried only $received bytes"
# The class counts every byte of the stream (headers included) that reached the job.
[ "$got41" -ge "$received" ] || fail "job 41's IFB class counted $got41 bytes of a $received-byte stream"
[ "$got42" -lt 100000 ] || fail "job 42's IFB class counted $got42 bytes of job 41's stream"
[ "$(ifb_ceil "$m42")" = 200Mbit ] || fail "job 42's IFB class changed"
# IPv6: a stream into job 42 is counted in job 42's class, not 41's.
start_server 5402
before41=$(ifb_bytes "$m41")
before42=$(ifb_bytes "$m42")
tool run 42 -- timeout 30 iperf3 -6 -c fd77::2 -p 5402 -R -t 2 -J >"$STATE_ROOT/iperf6.json" \
  || fail "iperf3 -6 -R in job 42: $(tail -5 "$STATE_ROOT/iperf6.json")"
received6=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(int(j["end"]["sum_received"]["bytes"]))' "$STATE_ROOT/iperf6.json")
bps6=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(int(j["end"]["sum_received"]["bits_per_second"]))' "$STATE_ROOT/iperf6.json")
got41=$(( $(ifb_bytes "$m41") - before41 ))
got42=$(( $(ifb_bytes "$m42") - before42 ))
echo "job 42 received $received6 bytes over IPv6 at $((bps6 / 1000)) kbit/s: $(python3 -c "print(round($bps6 / 200e6, 3))") of its 200Mbit ingress ceil; IFB class 42 counted $got42, 41 $got41"
[ "$got42" -ge "$received6" ] || fail "job 42's IFB class counted $got42 bytes of a $received6-byte IPv6 stream"
[ "$got41" -lt 100000 ] || fail "job 41's IFB class counted $got41 bytes of job 42's stream"

# lanesctl status: the ingress class and its counters, human, JSON, Prometheus.
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
status() { $NA "$LANESCTL" --config "$CFG" status --node testnode "$@"; }
out=$(status) || fail "lanesctl status: $out"
echo "$out"
echo "$out" | grep -E "^41 +test +in:$DEV +10Mbit +50Mbit " >/dev/null || fail "status has no ingress row for job 41: $out"
bytes=$(status --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
job = [x for x in j["jobs"] if x["job_id"] == 41][0]
print(job["ingress"][0]["bytes"])')
[ "$bytes" -ge "$received" ] || fail "lanesctl status --json: job 41 ingress bytes $bytes < $received"
status --prometheus "$STATE_ROOT/lanes.prom" || fail "lanesctl status --prometheus"
grep -q "^lanes_job_bytes_total{hpc_job=\"41\",class=\"test\",device=\"$DEV\",host=\"testnode\",direction=\"ingress\"} [1-9]" \
  "$STATE_ROOT/lanes.prom" || fail "no ingress sample for job 41: $(grep 'hpc_job="41"' "$STATE_ROOT/lanes.prom" | head -3)"
grep -q "^lanes_job_ceil_bytes_per_second{hpc_job=\"41\",class=\"test\",device=\"$DEV\",host=\"testnode\",direction=\"egress\"} " \
  "$STATE_ROOT/lanes.prom" || fail "no egress sample for job 41"

# lanesctl check --node tries what ingress caps need (a throwaway IFB, a netdev
# egress chain) and leaves nothing of it behind.
sed 's/^rate = "10Mbit"$/rate = "10Mbit"\ningress_rate = "10Mbit"/' "$CFG" >"$STATE_ROOT/check.toml"
out=$($NA "$LANESCTL" --config "$STATE_ROOT/check.toml" check --node testnode 2>&1) || fail "lanesctl check --node: $out"
$NA ip link show lanes-ifbcheck >/dev/null 2>&1 && fail "lanesctl check left its probe IFB"
$NA nft list tables | grep -q lanes_in_check && fail "lanesctl check left its probe table"

# lanes-agent repairs them on its own (netlink events: the IFB's tc, the netdev
# table), with resync_interval at an hour so that events alone drive it.
AGENT=$BUILDDIR/agent/lanes-agent
[ -x "$AGENT" ] || fail "$AGENT not built"
printf '[agent]\nresync_interval = "1h"\n' >>"$CFG"
$NA "$AGENT" --config "$CFG" --node testnode 2>>"$STATE_ROOT/agent.log" &
AGENT_PID=$!
STARTED_PIDS="$STARTED_PIDS $AGENT_PID"
wait_for() {  # DESC SECONDS CMD...
  local desc=$1 secs=$2 i
  shift 2
  for i in $(seq $((secs * 10))); do "$@" && return 0; sleep 0.1; done
  fail "$desc (after ${secs}s); agent log: $(tail -5 "$STATE_ROOT/agent.log")"
}
class_is() { [ "$(ifb_ceil "$1")" = "$2" ]; }
table_has_41() { $NA nft list set netdev lanes_in jobs 2>/dev/null | grep -q "1a4e:$m41"; }
sleep 1  # the agent's first converge
$NA tc class del dev "$IFB" classid "1a4e:$m41" || fail "tc class del (agent)"
wait_for "lanes-agent did not put job 41's IFB class back" 20 class_is "$m41" 50Mbit
$NA nft delete table netdev lanes_in || fail "nft delete table netdev lanes_in"
wait_for "lanes-agent did not put the netdev table back" 20 table_has_41
echo "lanes-agent repaired the IFB class and the netdev table"
stop_pid "$AGENT_PID" || fail "lanes-agent exit $? on SIGTERM: $(tail -5 "$STATE_ROOT/agent.log")"

# ---- 2. a deleted IFB class is repaired.
$NA tc class del dev "$IFB" classid "1a4e:$m41" || fail "tc class del"
[ -z "$(ifb_class "$m41")" ] || fail "the class is still there"
out=$(tool converge) || fail "converge: $out"
echo "$out"
echo "$out" | grep -qx "ifb_class missing 41 $DEV" || fail "converge did not report job 41's IFB class: $out"
[ "$(ifb_ceil "$m41")" = 50Mbit ] || fail "job 41's IFB class not repaired: '$(ifb_ceil "$m41")'"
out=$(tool converge) || fail "second converge: $out"
echo "$out" | grep -qx "repairs 0 jobs 2" || fail "second converge repaired again: $out"

# ---- 2b. An IFB deleted and made again: converge rebuilds the chains bound
# to the new IFB (the index in the in chain's comment), and job 41's stream
# reaches its class again.
ifindex_of() { $NA ip -o link show dev "$1" | cut -d: -f1; }
TAG=${IFB#lanes-ifb}
$NA ip link del "$IFB" || fail "ip link del $IFB"
out=$(tool converge) || fail "converge after $IFB went: $out"
echo "$out"
echo "$out" | grep -q "^nft_ingress " || fail "converge did not rebuild the netdev chains for the new $IFB: $out"
$NA nft list chain netdev lanes_in "in_$TAG" | grep -q "IFB ifindex $(ifindex_of "$IFB")\"" ||
  fail "in_$TAG is not bound to the new $IFB ($(ifindex_of "$IFB")): $($NA nft list chain netdev lanes_in "in_$TAG")"
[ "$(ifb_ceil "$m41")" = 50Mbit ] || fail "job 41's class on the new $IFB: '$(ifb_ceil "$m41")'"
start_server 5403
before41=$(ifb_bytes "$m41")
tool run 41 -- timeout 30 iperf3 -c 10.77.0.2 -p 5403 -R -t 2 -J >"$STATE_ROOT/iperf-rebound.json" ||
  fail "iperf3 -R in job 41 after $IFB was made again: $(tail -5 "$STATE_ROOT/iperf-rebound.json")"
received=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(int(j["end"]["sum_received"]["bytes"]))' "$STATE_ROOT/iperf-rebound.json")
got41=$(( $(ifb_bytes "$m41") - before41 ))
echo "after $IFB was made again: job 41 received $received bytes, its class counted $got41"
[ "$received" -gt 1000000 ] && [ "$got41" -ge "$received" ] ||
  fail "after $IFB was made again job 41's class counted $got41 bytes of a $received-byte stream"
out=$(tool converge) || fail "converge after the rebuild: $out"
echo "$out" | grep -qx "repairs 0 jobs 2" || fail "a converge after the rebuild repaired again: $out"

# ---- 3. teardown.
tool remove 41 || fail "remove 41"
[ -z "$(ifb_class "$m41")" ] || fail "job 41's IFB class left after its epilog"
$NA nft list set netdev lanes_in jobs | grep -q "1a4e:$m41" && fail "job 41 left in @jobs"
[ "$(ifb_ceil "$m42")" = 200Mbit ] || fail "job 42 lost its IFB class when 41 ended"
tool remove 42 || fail "remove 42"
[ -z "$(ifb_of_dev)" ] || fail "IFB left after the last job: $(ifb_of_dev)"
$NA nft list tables | grep -q "netdev lanes_in" && fail "table netdev lanes_in left after the last job"
$NA tc qdisc show dev "$DEV" ingress | grep -q . && fail "an ingress qdisc left on $DEV"
# A NIC absent at the prolog (hot-plugged, recreated) gets the job's ingress
# class on its own IFB once it is there, as it gets its egress class.
DEV2=${P}z
both() { $NA "$TOOL" --state "$STATE" --nic "${P}[xz]" --speed "$SPEED" --cgroup-root "$CGROOT" "$@"; }
ifb_of() { $NA ip -o -d link show | grep "alias lanes ingress of $1\b" | grep -o 'lanes-ifb[0-9a-f]\{6\}'; }
both apply 44 --rate 10Mbit --ingress-rate 20Mbit >/dev/null || fail "apply 44"
m44=$(both list | awk '$1 == 44 {print $3}')
$NA ip link add "$DEV2" type veth peer name "${P}zp" || fail "ip link add $DEV2"
$NA ip link set "${P}zp" up
$NA ip link set "$DEV2" up
out=$(both converge) || fail "converge after $DEV2 came: $out"
echo "$out"
IFB2=$(ifb_of "$DEV2")
[ -n "$IFB2" ] || fail "no IFB for $DEV2 after converge: $out"
[ "$($NA tc class show dev "$IFB2" classid "1a4e:$m44" | grep -o 'ceil [0-9.]*[KMG]*bit' | awk '{print $2}')" = 20Mbit ] ||
  fail "job 44 has no ingress class on $IFB2: $($NA tc class show dev "$IFB2")"
grep -q "^ingress_device=$DEV2 " "$STATE/job_44" || fail "job 44's state lacks $DEV2"
out=$(both converge) || fail "second converge: $out"
echo "$out" | grep -qx "repairs 0 jobs 1" || fail "second converge after $DEV2 came repaired again: $out"
# The NIC deleted and made again (a driver reload): the chains still list it,
# but their hooks went with the old device; converge binds them to the new one.
$NA ip link del "$DEV2" || fail "ip link del $DEV2"
$NA ip link add "$DEV2" type veth peer name "${P}zp" || fail "ip link add $DEV2 again"
$NA ip link set "${P}zp" up
$NA ip link set "$DEV2" up
out=$(both converge) || fail "converge after $DEV2 was made again: $out"
echo "$out"
echo "$out" | grep -q "^nft_ingress " || fail "converge did not rebuild the chains of the new $DEV2: $out"
TAG2=${IFB2#lanes-ifb}
$NA nft list chain netdev lanes_in "eg_$TAG2" | grep -q "NIC ifindex $(ifindex_of "$DEV2")," ||
  fail "eg_$TAG2 is not bound to the new $DEV2 ($(ifindex_of "$DEV2")): $($NA nft list chain netdev lanes_in "eg_$TAG2")"
out=$(both converge) || fail "converge after the rebuild: $out"
echo "$out" | grep -qx "repairs 0 jobs 1" || fail "a converge after $DEV2's rebuild repaired again: $out"
both remove 44 || fail "remove 44"
[ -z "$(ifb_of_dev)" ] || fail "IFB left after job 44: $(ifb_of_dev)"
$NA ip link del "$DEV2"
# gc --all takes whatever is left, too.
tool apply 43 --rate 10Mbit --ingress-rate 20Mbit >/dev/null || fail "apply 43"
[ -n "$(ifb_of_dev)" ] || fail "no IFB for job 43"
tool remove-all || fail "remove-all"
[ -z "$(ifb_of_dev)" ] || fail "IFB left after remove-all"
$NA nft list tables | grep -q "netdev lanes_in" && fail "table netdev lanes_in left after remove-all"

# ---- 4. bad config names the key.
printf '[classes.training]\nrate = "1Gbit"\ningress_rate = "5Gbit"\ningress_ceil = "2Gbit"\n' >"$CFG"
out=$("$LANESCTL" check --config "$CFG" 2>&1) && fail "lanesctl check accepted ingress_ceil below ingress_rate"
echo "$out" | grep -q "lanes.toml:4:16: classes.training.ingress_ceil: ingress_ceil \"2Gbit\" is below ingress_rate \"5Gbit\"" \
  || fail "lanesctl check did not name the key: $out"
echo "PASS: $(basename "$0")"
