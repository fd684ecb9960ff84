#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (3) Two jobs on one NIC get separate HTB classes, each with its own rate and
# its own counters (each job's bytes land in its class only).
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"

out7=$(tool apply 7 --rate 30Mbit --dscp CS1) || fail "apply job 7"
out8=$(tool apply 8 --rate 60Mbit --ceil 80Mbit --dscp AF41 --rank 3) || fail "apply job 8"
echo "$out7"; echo "$out8"
classes=$($NA tc class show dev "$DEV")
echo "$classes"
echo "$classes" | grep -q "class htb 1a4e:7 parent 1a4e:1 leaf 7: prio 6 rate 30Mbit ceil 30Mbit" || fail "class of job 7"
echo "$classes" | grep -q "class htb 1a4e:8 parent 1a4e:1 leaf 8: prio 3 rate 60Mbit ceil 80Mbit" || fail "class of job 8"

# Both senders stay below their caps, so what was written is what got sent.
recvbytes() { python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bytes"]))'; }
start_server 5301
r7=$(tool run 7 -- timeout 20 iperf3 -c 10.77.0.2 -p 5301 -t 1 -b 10M -J | recvbytes) || fail "job 7 iperf3"
start_server 5302
r8=$(tool run 8 -- timeout 20 iperf3 -c 10.77.0.2 -p 5302 -t 1 -b 4M -J | recvbytes) || fail "job 8 iperf3"

c7=$(tool counters 7) || fail "counters 7"
c8=$(tool counters 8) || fail "counters 8"
echo "job 7: receiver got $r7 payload bytes; class counters (dev bytes packets drops overlimits backlog): $c7"
echo "job 8: receiver got $r8 payload bytes; class counters: $c8"
b7=$(echo "$c7" | awk '{print $2}'); p7=$(echo "$c7" | awk '{print $3}')
b8=$(echo "$c8" | awk '{print $2}'); p8=$(echo "$c8" | awk '{print $3}')
# Each class counts its own job's payload + headers + the iperf3 control
# connection, and nothing of the other job: within [r, 1.1 r + 20000].
[ "$b7" -ge "$r7" ] && [ "$b7" -le $((r7 + r7 / 10 + 20000)) ] || fail "job 7 class counted $b7 bytes for $r7 received"
[ "$b8" -ge "$r8" ] && [ "$b8" -le $((r8 + r8 / 10 + 20000)) ] || fail "job 8 class counted $b8 bytes for $r8 received"
[ "$p7" -gt 0 ] && [ "$p8" -gt 0 ] || fail "packet counters"
# tc agrees with what the library reports
tcb7=$($NA tc -s class show dev "$DEV" classid 1a4e:7 | awk '/Sent/ {print $2; exit}')
[ "$tcb7" = "$b7" ] || fail "tc says job 7 sent $tcb7 bytes, the library $b7"
tool remove 7 || fail "remove 7"
tool remove 8 || fail "remove 8"
echo "PASS"
