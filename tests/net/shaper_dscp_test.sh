#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (2) A job's packets carry its DSCP on the wire, IPv4 and IPv6 (captured in the
# peer namespace); another process's packets on the same NIC do not.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"
command -v tcpdump >/dev/null || fail "tcpdump not found"

tool apply 9 --rate 200Mbit --dscp AF41 >/dev/null || fail "apply job 9"   # AF41 = 34: TOS 0x88

PCAP=$STATE/capture.pcap
$NB timeout 40 tcpdump -i "$PEER" -nn -U -w "$PCAP" 'tcp dst portrange 5301-5304' 2>"$STATE/tcpdump.err" &
TCPDUMP=$!
STARTED_PIDS="$STARTED_PIDS $TCPDUMP"
for _ in $(seq 50); do grep -q listening "$STATE/tcpdump.err" 2>/dev/null && break; sleep 0.1; done

start_server 5301
tool run 9 -- timeout 20 iperf3 -c 10.77.0.2 -p 5301 -t 1 -b 5M >/dev/null || fail "job iperf3 (IPv4)"
start_server 5303
tool run 9 -- timeout 20 iperf3 -6 -c fd77::2 -p 5303 -t 1 -b 5M >/dev/null || fail "job iperf3 (IPv6)"
start_server 5302
$NA timeout 20 iperf3 -c 10.77.0.2 -p 5302 -t 1 -b 5M >/dev/null || fail "other iperf3 (IPv4)"
start_server 5304
$NA timeout 20 iperf3 -6 -c fd77::2 -p 5304 -t 1 -b 5M >/dev/null || fail "other iperf3 (IPv6)"
sleep 0.3
kill -INT $TCPDUMP; wait $TCPDUMP 2>/dev/null

count() { tcpdump -r "$PCAP" -nn "$1" 2>/dev/null | wc -l; }
V4DSCP='(ip[1] & 0xfc) = 0x88'
V6DSCP='(ip6[0:2] & 0x0fc0) = 0x0880'
DATA4='ip[2:2] > 100'
DATA6='ip6[4:2] > 60'
for spec in "4 5301 job" "6 5303 job" "4 5302 other" "6 5304 other"; do
  set -- $spec
  if [ "$1" = 4 ]; then fam=ip; mark=$V4DSCP; data=$DATA4; else fam=ip6; mark=$V6DSCP; data=$DATA6; fi
  all=$(count "$fam and tcp dst port $2")
  marked=$(count "$fam and tcp dst port $2 and $mark")
  data_all=$(count "$fam and tcp dst port $2 and $data")
  data_marked=$(count "$fam and tcp dst port $2 and $data and $mark")
  syn_all=$(count "$fam and tcp dst port $2 and tcp[tcpflags] & tcp-syn != 0")
  syn_marked=$(count "$fam and tcp dst port $2 and tcp[tcpflags] & tcp-syn != 0 and $mark")
  [ "$fam" = ip6 ] && syn_all=$(count "$fam and tcp dst port $2 and ip6[53] & 2 != 0") \
                   && syn_marked=$(count "$fam and tcp dst port $2 and ip6[53] & 2 != 0 and $mark")
  echo "IPv$1 $3 flow (port $2): $marked/$all packets with DSCP AF41; data $data_marked/$data_all; SYN $syn_marked/$syn_all"
  [ "$all" -gt 10 ] || fail "IPv$1 $3: only $all packets captured"
  if [ "$3" = job ]; then
    [ "$data_all" -gt 10 ] && [ "$data_marked" -eq "$data_all" ] || fail "IPv$1 job data packets not all marked"
    [ "$syn_all" -ge 1 ] && [ "$syn_marked" -eq "$syn_all" ] || fail "IPv$1 job SYN not marked"
    # Only the TIME_WAIT socket's last ACK may go out unmarked (not a full socket).
    [ $((all - marked)) -le 2 ] || fail "IPv$1 job: $((all - marked)) packets unmarked"
  else
    [ "$marked" -eq 0 ] || fail "IPv$1 other process: $marked packets carry the job's DSCP"
  fi
done
tool remove 9 || fail "remove"
echo "PASS"
