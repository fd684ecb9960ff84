#!/bin/sh
# (1) A job's TCP flow is capped within 5% of its class rate; another process's
# flow on the same NIC is not. The job's iperf3 joins the job's cgroup before it
# starts (shaper_tool run = what slurm_spank_task_init_privileged does).
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"

CAP=50000000            # 50 Mbit/s
tool apply 7 --rate 50Mbit --dscp CS1 >/dev/null || fail "apply job 7"

start_server 5301
job=$(tool run 7 -- timeout 20 iperf3 -c 10.77.0.2 -p 5301 -t 3 -J | goodput) || fail "job iperf3"
start_server 5302
other=$($NA timeout 20 iperf3 -c 10.77.0.2 -p 5302 -t 3 -J | goodput) || fail "other iperf3"

# HTB counts whole frames (14 + 20 + 20 + 12 header bytes per 1448-byte segment at
# MTU 1500); iperf3 reports payload. Expected goodput at the cap:
expected=$((CAP * 1448 / 1514))
err_pct=$(python3 -c "print(round(100.0 * ($job - $expected) / $expected, 2))")
raw_pct=$(python3 -c "print(round(100.0 * ($job - $CAP) / $CAP, 2))")
echo "job 7 goodput ${job} bit/s (cap ${CAP}, expected goodput ${expected}): ${err_pct}% off (${raw_pct}% vs raw cap)"
echo "unshaped flow goodput ${other} bit/s"
python3 -c "import sys; sys.exit(0 if abs($job - $expected) <= 0.05 * $expected else 1)" \
  || fail "job flow not within 5% of its cap"
[ "$other" -gt $((CAP * 3)) ] || fail "the other process's flow looks capped too (${other} bit/s)"

# The job's class saw the bytes; the default class carried the other flow.
bytes=$(tool counters 7 | awk '{print $2}')
[ "${bytes:-0}" -gt $((CAP / 8 * 2)) ] || fail "job class counted only ${bytes} bytes"
tool remove 7 || fail "remove"
echo "PASS"
