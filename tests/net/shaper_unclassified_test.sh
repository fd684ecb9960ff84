#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (#11.3) Nothing escapes classification: a process outside any job that sets
# IP_TOS/IPV6_TCLASS to AF41 itself leaves with the unclassified DSCP (CS0), and so
# does a job whose class has no DSCP; a job's own DSCP is always written over what
# its sockets ask for. The default HTB class (everything not in a job) is capped
# as configured. With unclassified_dscp = "keep" the sender's DSCP is left alone.
# DSCP bytes checked on the wire (tcpdump in the peer namespace).
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"
command -v tcpdump >/dev/null || fail "tcpdump not found"
command -v python3 >/dev/null || fail "python3 not found"

# $SEND ... 0x88: the sender itself asks for TOS/TCLASS 0x88 (AF41).
FILTER='udp dst portrange 5400-5499'
count() { pcap_count "$1"; }
expect() {  # PORT DSCP WHAT
  all=$(count "udp dst port $1")
  with=$(count "udp dst port $1 and ((ip and (ip[1] & 0xfc) = $(($2 << 2))) or (ip6 and (ip6[0:2] & 0x0fc0) = $(($2 << 6))))")
  echo "$3: $with/$all packets with DSCP $2"
  [ "$all" -eq 20 ] && [ "$with" -eq 20 ] || fail "$3: expected 20/20 packets with DSCP $2, got $with/$all"
}

tool apply 9 --rate 100Mbit --dscp AF41 >/dev/null || fail "apply job 9 (AF41)"
tool apply 10 --rate 100Mbit >/dev/null || fail "apply job 10 (class without dscp)"
tool apply 11 --rate 100Mbit --dscp CS1 >/dev/null || fail "apply job 11 (CS1)"

capture_start marks "$FILTER"
$NA $SEND 4 5401 0x88 || fail "send outside jobs (IPv4)"
$NA $SEND 6 5402 0x88 || fail "send outside jobs (IPv6)"
tool run 10 -- $SEND 4 5403 0x88 || fail "send in job 10"
tool run 10 -- $SEND 6 5404 0x88 || fail "send in job 10 (IPv6)"
tool run 11 -- $SEND 4 5405 0x88 || fail "send in job 11"
tool run 11 -- $SEND 6 5406 0x88 || fail "send in job 11 (IPv6)"
tool run 9 -- $SEND 4 5407 0x88 || fail "send in job 9"
capture_stop
expect 5401 0 "IPv4 outside any job, sender asked AF41"
expect 5402 0 "IPv6 outside any job, sender asked AF41"
expect 5403 0 "IPv4 job without a class DSCP, sender asked AF41"
expect 5404 0 "IPv6 job without a class DSCP, sender asked AF41"
expect 5405 8 "IPv4 job of class CS1, sender asked AF41"
expect 5406 8 "IPv6 job of class CS1, sender asked AF41"
expect 5407 34 "IPv4 job of class AF41"

# The default class: 5% guaranteed, capped at 25% of the 10 Gbit/s link by default.
cls=$($NA tc class show dev "$DEV" classid 1a4e:fffe)
echo "default class: $cls"
echo "$cls" | grep -q "rate 500Mbit ceil 2500Mbit" || fail "default class not capped at 25%: $cls"

for j in 9 10 11; do tool remove $j || fail "remove $j"; done
tool remove-all || fail "remove-all"

# unclassified_dscp = "keep": the sender's own DSCP stays; another cap.
UOPT="--unclassified-dscp keep --unclassified-ceil 1Gbit"
$NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" $UOPT apply 12 --rate 100Mbit \
  >/dev/null || fail "apply 12 with keep"
capture_start keep "$FILTER"
$NA $SEND 4 5411 0x88 || fail "send outside jobs (keep)"
capture_stop
expect 5411 34 "IPv4 outside any job with unclassified_dscp=keep"
cls=$($NA tc class show dev "$DEV" classid 1a4e:fffe)
echo "$cls" | grep -q "ceil 1Gbit" || fail "unclassified_ceil 1Gbit not applied: $cls"
$NA "$TOOL" --state "$STATE" --nic "$DEV" --speed "$SPEED" --cgroup-root "$CGROOT" $UOPT remove 12 || fail "remove 12"
echo "PASS"
