#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/leafspine.sh, the fabric of the fabric-scale benchmark (issue 24), in CI
# size: two leaves, two spines, three hosts. Asserts what the kernel counted,
# never rates or latencies:
#   - ECMP: 8 TCP streams from a host on leaf 1 to a host on leaf 2 crossed
#     both of leaf 1's uplinks (both spines carried packets);
#   - DSCP: the streams, sent as CS1, went through the uplinks' scavenger
#     class and not the others'; UDP datagrams sent as AF41 went through the priority
#     class; every one of those datagrams arrived (iperf3 UDP, no loss);
#   - the queue sampler saw the scavenger class's backlog on the uplinks, and
#     the bytes it sent (what fabric_scale.sh's share is computed from).
set -uo pipefail
if (($(id -u) != 0)); then
    echo "SKIP: needs root (network namespaces, tc)"
    exit 77
fi
for t in iperf3 nsenter ethtool jq; do
    command -v "$t" >/dev/null || { echo "SKIP: needs $t"; exit 77; }
done
src=${LANES_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=bench/leafspine.sh
source "$src/bench/leafspine.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/lanes-leafspine.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    ls_destroy
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; ls_uplink_stats; exit 1; }

LS_UPLINK_RATE=50mbit ls_create || fail "ls_create"
ls_host a1 1 11 && ls_host a2 1 12 && ls_host b1 2 21 || fail "hosts"
b1=$(ls_ip b1)
for port in 5201 5202; do
    ls_spawn b1 "$work/iperf3-s$port.log" iperf3 -s -p "$port"
    pids+=("$LS_SPAWNED")
done
for _ in $(seq 50); do
    (($(ls_exec b1 ss -Hltn | grep -c ':520[12] ') == 2)) && break
    sleep 0.1
done
ls_exec a2 iperf3 -c "$b1" -p 5202 -t 1 >/dev/null 2>&1 || fail "no route from leaf 1 to leaf 2"
ls_qos || fail "ls_qos"  # fresh counters

ls_queue_sample "$work/queues.txt" 4 0.1 &
pids+=($!)
# CS1 = DSCP 8 = TOS 0x20.
timeout 20 nsenter --net="/run/netns/$(ls_ns a1)" -- iperf3 -c "$b1" -p 5201 -P 8 -t 3 -S 0x20 -J \
    >"$work/iperf3.json" 2>"$work/iperf3.err" &
client=$!
# AF41 = DSCP 34 = TOS 0x88.
sleep 0.5
ls_exec a2 timeout 20 iperf3 -c "$b1" -p 5202 -u -b 200k -l 200 -t 2 -S 0x88 -J >"$work/udp.json" 2>&1
udp_rc=$?
wait "$client" || fail "iperf3 failed: $(head -c 300 "$work/iperf3.err")"
wait "${pids[-1]}"

stats=$(ls_uplink_stats)
echo "$stats"
grep -E '^lf1 up[12] ' <<<"$stats" | while read -r _ dev pkts _; do
    ((pkts > 1000)) || { echo "FAIL: leaf 1 uplink $dev sent only $pkts packets: no ECMP"; exit 1; }
done || exit 1
read -r sum10 sum20 sum30 < <(grep -E '^lf1 up[12] ' <<<"$stats" | awk '{ a += $4; b += $5; c += $6 } END { print a, b, c }')
((sum30 > 1000000)) || fail "the CS1 streams did not go through the scavenger class ($sum30 bytes)"
((sum20 < sum30 / 100)) || fail "best effort carried $sum20 bytes beside scavenger's $sum30: DSCP not honoured"
((sum10 > 100 * 200)) || fail "the AF41 datagrams did not go through the priority class ($sum10 bytes)"
read -r sent lost < <(jq -r '"\(.end.sum.packets // 0) \(.end.sum.lost_packets // -1)"' "$work/udp.json" 2>/dev/null)
((udp_rc == 0 && ${sent:-0} > 100 && ${lost:--1} == 0)) || fail "AF41 datagrams: sent ${sent:-?}, lost ${lost:-?} (iperf3 exit $udp_rc)"
[[ -s $work/queues.txt ]] && awk '$5 > 0 { n++ } END { exit !(n > 0) }' "$work/queues.txt" ||
    fail "the queue sampler saw no backlog on any uplink"
# Column 8: the scavenger class's sent bytes; it must grow by the CS1 streams'.
awk 'NF >= 8 { if (!($2 in first)) first[$2] = $8; last[$2] = $8 }
    END { for (e in first) if (last[e] - first[e] > 1000000) ok = 1; exit !ok }' "$work/queues.txt" ||
    fail "the queue sampler's sent bytes did not grow with the CS1 streams: $(tail -2 "$work/queues.txt")"
echo "PASS: ECMP over both spines, CS1 in scavenger ($sum30 bytes), AF41 in priority ($sum10 bytes), $sent datagrams none lost"
