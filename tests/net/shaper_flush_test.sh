#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (#11.6) `nft flush ruleset` (Debian's nftables.conf starts with it) during running
# jobs: the next prolog puts back the marks of every job from its state file, not
# only its own; `reapply` (lanesctl reapply) does it without a prolog, and also puts
# back HTB classes after a `tc qdisc del`. Checked with DSCP bytes on the wire and
# the HTB class counters of the running job.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"
command -v tcpdump >/dev/null || fail "tcpdump not found"
command -v python3 >/dev/null || fail "python3 not found"

FILTER='udp dst portrange 5500-5599'
marked() {  # PORT -> number of packets with TOS 0x88 (AF41)
  pcap_count "udp dst port $1 and (ip[1] & 0xfc) = 0x88"
}
class_packets() {  # JOB -> packets through the job's HTB class
  tool counters "$1" | awk '{print $3}'
}

tool apply 21 --rate 100Mbit --dscp AF41 >/dev/null || fail "apply 21"
tool apply 22 --rate 100Mbit --dscp CS2 >/dev/null || fail "apply 22"
out=$(tool check) || fail "check"
echo "before the flush: $out"
case "$out" in ok*) ;; *) fail "check before the flush: $out" ;; esac

# 1. Flush; job 21's packets are unmarked, and check says so.
$NA nft flush ruleset || fail "nft flush ruleset"
out=$(tool check) || fail "check"
echo "after the flush: $out"
case "$out" in missing*) ;; *) fail "check did not see the flush: $out" ;; esac
capture_start flushed "$FILTER"
tool run 21 -- $SEND 4 5501 || fail "send in job 21"
capture_stop
[ "$(marked 5501)" -eq 0 ] || fail "marks still there after the flush?"
before=$(class_packets 21)

# 2. The next prolog (another job) re-marks every job.
tool apply 23 --rate 100Mbit --dscp CS1 >/dev/null || fail "apply 23 after the flush"
capture_start prolog "$FILTER"
tool run 21 -- $SEND 4 5502 || fail "send in job 21"
capture_stop
n=$(marked 5502)
echo "job 21 after the next prolog: $n/20 packets AF41"
[ "$n" -eq 20 ] || fail "job 21 not re-marked by the next prolog ($n/20)"
after=$(class_packets 21)
[ "$after" -ge $((before + 20)) ] || fail "job 21's packets do not reach its HTB class again ($before -> $after)"
out=$(tool check) || fail "check"
case "$out" in ok*) ;; *) fail "check after the prolog: $out" ;; esac

# 3. Flush again, then reapply without any prolog.
$NA nft flush ruleset || fail "nft flush ruleset"
out=$(tool reapply) || fail "reapply"
echo "reapply: $out"
case "$out" in missing*) ;; *) fail "reapply did not report what was missing: $out" ;; esac
capture_start reapplied "$FILTER"
tool run 21 -- $SEND 4 5503 || fail "send in job 21"
capture_stop
n=$(marked 5503)
echo "job 21 after reapply: $n/20 packets AF41"
[ "$n" -eq 20 ] || fail "job 21 not re-marked by reapply ($n/20)"
out=$(tool reapply) || fail "reapply"
case "$out" in ok*) ;; *) fail "second reapply should find nothing missing: $out" ;; esac

# 4. The root qdisc deleted by hand: reapply puts the classes back.
$NA tc qdisc del dev "$DEV" root || fail "tc qdisc del"
out=$(tool reapply) || fail "reapply after tc qdisc del"
echo "reapply: $out"
for j in 21 22 23; do
  minor=$(tool list | awk -v j=$j '$1 == j {print $3}')
  $NA tc class show dev "$DEV" classid 1a4e:$minor | grep -q "1a4e:$minor" || fail "class of job $j not back"
done
for j in 21 22 23; do tool remove $j || fail "remove $j"; done
echo "PASS"
