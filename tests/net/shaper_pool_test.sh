#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (10) The parked pool on a real HTB: a job that ends while another runs leaves
# its class parked (the parked minimum, no leaf qdisc, no nft element, a record
# in state_dir/parked), the next job takes it over with its own rate and leaf and
# counts only its own bytes, and the node's last job takes the pool with it.
# nodes.parked_classes = 0 deletes at once.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"

recvbytes() { python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bytes"]))'; }
class_of() { $NA tc class show dev "$DEV" classid "1a4e:$1"; }
leaf_of() { $NA tc qdisc show dev "$DEV" | grep " parent 1a4e:$1 " | grep -v "qdisc pfifo 0:"; }
raw_bytes() { $NA tc -s class show dev "$DEV" classid "1a4e:$1" | awk '/Sent/ {print $2; exit}'; }

tool apply 7 --rate 30Mbit --dscp CS1 | grep -q "minor 7 " || fail "apply job 7"
tool apply 8 --rate 40Mbit --dscp AF41 | grep -q "minor 8 " || fail "apply job 8"
start_server 5401
r7=$(tool run 7 -- timeout 20 iperf3 -c 10.77.0.2 -p 5401 -t 1 -b 8M -J | recvbytes) || fail "job 7 iperf3"
id7=$(stat -c %i "$CGROOT/job_7")
nft_holds ${P}a "table inet lanes" "$CGROOT/job_7" "$id7" || fail "job 7 not marked"

# ---- job 7 ends while job 8 runs: parked, not deleted
tool remove 7 || fail "remove 7"
cls=$(class_of 7)
echo "parked: $cls"
echo "$cls" | grep -q "class htb 1a4e:7 parent 1a4e:1 prio 7 rate 8Kbit ceil 8Kbit" || fail "job 7's class not parked: $cls"
[ -z "$(leaf_of 7)" ] || fail "the parked class kept job 7's leaf qdisc: $(leaf_of 7)"
nft_holds ${P}a "table inet lanes" "$CGROOT/job_7" "$id7" && fail "job 7's nft element left"
[ -d "$CGROOT/job_7" ] && fail "job 7's cgroup left"
[ -f "$STATE/parked/0007" ] || fail "no parked record: $(ls -R "$STATE")"
[ -e "$STATE/job_7" ] || [ -e "$STATE/minor_0007" ] && fail "job 7's state or claim left"
parked7=$(raw_bytes 7)
[ "$parked7" -ge "$r7" ] || fail "the parked class counted $parked7 bytes, job 7 sent $r7"

# ---- job 9 takes it over: its own rate, leaf and counters
out=$(tool apply 9 --rate 20Mbit --dscp CS2) || fail "apply job 9"
echo "$out" | grep -q "minor 7 " || fail "job 9 did not take the parked class over: $out"
class_of 7 | grep -q "leaf 7: prio 6 rate 20Mbit ceil 20Mbit" || fail "job 9's class: $(class_of 7)"
[ -n "$(leaf_of 7)" ] || fail "job 9's class has no leaf qdisc of its own: $($NA tc qdisc show dev "$DEV")"
[ -z "$(ls "$STATE/parked")" ] || fail "parked record left after the takeover: $(ls "$STATE/parked")"
start_server 5402
r9=$(tool run 9 -- timeout 20 iperf3 -c 10.77.0.2 -p 5402 -t 1 -b 4M -J | recvbytes) || fail "job 9 iperf3"
c9=$(tool counters 9) || fail "counters 9"
b9=$(echo "$c9" | awk '{print $2}')
raw=$(raw_bytes 7)
echo "job 7 sent $r7, job 9 $r9; the class counted $raw in all, job 9's counters say $b9"
[ "$raw" -ge $((r7 + r9)) ] || fail "the kernel's class counted $raw bytes for $r7 + $r9"
[ "$b9" -ge "$r9" ] && [ "$b9" -le $((r9 + r9 / 10 + 20000)) ] || fail "job 9 counted $b9 bytes for its $r9 (job 7's $r7 not subtracted?)"

# ---- the last job's end takes the pool along
tool remove 9 || fail "remove 9"
class_of 7 | grep -q "rate 8Kbit ceil 8Kbit" || fail "job 9's class not parked while job 8 runs"
tool remove 8 || fail "remove 8"
left=$($NA tc class show dev "$DEV" | grep -vE "1a4e:(1|fffe) ")
[ -z "$left" ] || fail "classes left after the last job: $left"
[ -z "$(ls "$STATE/parked")" ] || fail "parked records left after the last job"

# ---- nodes.parked_classes = 0: deleted at once
tool --parked 0 apply 10 --rate 10Mbit >/dev/null || fail "apply 10"
tool --parked 0 apply 11 --rate 10Mbit >/dev/null || fail "apply 11"
tool --parked 0 remove 10 || fail "remove 10"
[ -z "$(class_of a)" ] || fail "parked_classes = 0 kept job 10's class: $(class_of a)"
tool --parked 0 remove 11 || fail "remove 11"
echo "PASS"
