#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# (1) A job's TCP flow goes through its HTB class, which holds it to the class
# rate: the kernel class has the rate and ceil asked for, counts every byte the
# job sent, and throttled the flow (overlimits); another process's flow on the
# same NIC does not touch the job's class. The job's iperf3 joins the job's
# cgroup before it starts (shaper_tool run = what slurm_spank_task_init_privileged
# does). How close the goodput came to the cap is printed as a figure (it
# depends on the machine's load), not asserted.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"

CAP=50000000            # 50 Mbit/s
tool apply 7 --rate 50Mbit --dscp CS1 >/dev/null || fail "apply job 7"
$NA tc class show dev "$DEV" | grep -q "class htb 1a4e:7 parent 1a4e:1 .*rate 50Mbit ceil 50Mbit" ||
  fail "job 7's class does not have rate 50Mbit ceil 50Mbit: $($NA tc class show dev "$DEV")"

recv_stats() { python3 -c 'import json,sys; j=json.load(sys.stdin)["end"]; print(int(j["sum_received"]["bytes"]), int(j["sum_received"]["bits_per_second"]))'; }
start_server 5301
set -- $(tool run 7 -- timeout 20 iperf3 -c 10.77.0.2 -p 5301 -t 3 -J | recv_stats) || fail "job iperf3"
job_got=$1 job_bps=$2
c7=$(tool counters 7) || fail "counters 7"
start_server 5302
set -- $($NA timeout 20 iperf3 -c 10.77.0.2 -p 5302 -t 3 -J | recv_stats) || fail "other iperf3"
other_got=$1 other_bps=$2
c7_after=$(tool counters 7) || fail "counters 7"

echo "job 7: the receiver got $job_got payload bytes; class counters (dev bytes packets drops overlimits backlog): $c7"
echo "other flow: the receiver got $other_got payload bytes; job 7's class afterwards: $c7_after"
bytes=$(echo "$c7" | awk '{print $2}')
overlimits=$(echo "$c7" | awk '{print $5}')
# Every payload byte the job got across went through its class (plus headers and the
# iperf3 control connection), and HTB had to hold the flow back.
[ "${job_got:-0}" -gt 0 ] || fail "the job's iperf3 got nothing across"
[ "${bytes:-0}" -ge "$job_got" ] || fail "job class counted $bytes bytes for $job_got payload bytes received"
[ "${overlimits:-0}" -gt 0 ] || fail "the job's class never throttled its flow (overlimits 0)"
# The other process's flow did not pass through the job's class.
[ "${other_got:-0}" -gt 0 ] || fail "the other iperf3 got nothing across"
[ "$c7_after" = "$c7" ] || fail "the other process's traffic was counted in job 7's class ($c7 -> $c7_after)"
# Figures: goodput against the cap as HTB counts it (frames: 1448 payload bytes per 1514).
python3 -c "print('figures: job goodput %.3f of the cap (payload share 1448/1514 = %.3f); unshaped flow %.1fx the cap' % ($job_bps / $CAP, 1448 / 1514, $other_bps / $CAP))"
tool remove 7 || fail "remove"
echo "PASS"
