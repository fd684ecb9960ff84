#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lanes-agent figures (docs/benchmark.md), in a network namespace with real
# HTB classes and nftables (tests/net/common.sh), root only:
#   1. time from a drift event to the repaired state, over N events alternating
#      `nft flush ruleset` and `tc qdisc del dev X root`, with JOBS jobs: the
#      time from just before the command to the first `check` that finds every
#      job's marks and classes in place (polled back to back; each poll is a
#      process of its own, which bounds the resolution to a few ms);
#   2. the agent's CPU (utime + stime from /proc/PID/stat) per repair;
#   3. the agent's CPU on an idle node holding IDLE_JOBS jobs for IDLE_SECONDS,
#      scaled to an hour, with the default resync interval (10 s), once holding
#      the line only and once also following a signal window.
# Usage: sudo bash bench/agent_repair_bench.sh   (LANES_BUILDDIR: the build tree)
# Settings: EVENTS (40), JOBS (10), IDLE_JOBS (100), IDLE_SECONDS (600: one
# clock tick, 10 ms, is 0.06 s/hour at that length), LANES_AGENT (the agent to
# measure, e.g. an older build for a before/after pair).
set -u
EVENTS=${EVENTS:-40}
JOBS=${JOBS:-10}
IDLE_JOBS=${IDLE_JOBS:-100}
IDLE_SECONDS=${IDLE_SECONDS:-600}
src=$(cd "$(dirname "$0")/.." && pwd)
export LANES_BUILDDIR=${LANES_BUILDDIR:-$src/build}
export LANES_SRCDIR=$src
. "$src/tests/net/common.sh"
AGENT=${LANES_AGENT:-$BUILDDIR/agent/lanes-agent}
[ -x "$AGENT" ] || fail "$AGENT not built"
CLK=$(getconf CLK_TCK)

all_ok() { case "$(tool check)" in ok*) return 0 ;; esac; return 1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
now_ns() { date +%s%N; }
write_config() {  # WITH_WINDOW (0/1)
  {
    echo 'default_class = "training"'
    if [ "$1" = 1 ]; then
      cat <<TOML
[signals.demand]
url = "http://127.0.0.1:9"
query = "up"
interval = "15s"
timeout = "500ms"
[windows.busy]
signal = "demand"
above = 10
until_below = 5
when_unknown = "busy"
TOML
    fi
    echo '[classes.training]'
    echo 'rate = "10Mbit"'
    echo 'ceil = "1Gbit"'
    echo 'dscp = "AF41"'
    [ "$1" = 1 ] && echo 'busy_window = "busy"' && echo 'busy_ceil = "200Mbit"'
    cat <<TOML
[nodes]
state_dir = "$STATE"
cgroup_root = "$CGROOT"
[[nodes.nic]]
device = "$DEV"
link_speed = "10Gbit"
[agent]
textfile_dir = "$STATE_ROOT/textfile"
TOML
  } >"$STATE_ROOT/lanes.toml"
}
start_agent() {
  $NA "$AGENT" --config "$STATE_ROOT/lanes.toml" --node n1 2>>"$STATE_ROOT/agent.log" &
  AGENT_PID=$!
  STARTED_PIDS="$STARTED_PIDS $AGENT_PID"
  for _ in $(seq 100); do [ -s "$STATE_ROOT/textfile/lanes_agent.prom" ] && return 0; sleep 0.1; done
  fail "agent did not start: $(tail -5 "$STATE_ROOT/agent.log")"
}
stop_agent() { kill -TERM "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; rm -f "$STATE_ROOT/textfile/lanes_agent.prom"; }

for j in $(seq 1 "$JOBS"); do
  tool apply $((1000 + j)) --class training --rate 10Mbit --ceil 1Gbit --dscp AF41 >/dev/null || fail "apply $j"
done
write_config 0
start_agent
all_ok || fail "not converged at start: $(tool check)"

# 1 + 2: drift events.
times=()
cpu0=$(cpu_ticks "$AGENT_PID")
for i in $(seq 1 "$EVENTS"); do
  t0=$(now_ns)
  if ((i % 2)); then $NA nft flush ruleset; else $NA tc qdisc del dev "$DEV" root; fi
  until all_ok; do
    (($(now_ns) - t0 > 30000000000)) && fail "event $i not repaired within 30 s"
  done
  times+=($((($(now_ns) - t0) / 1000)))  # microseconds
  sleep 0.2
done
cpu1=$(cpu_ticks "$AGENT_PID")
stop_agent
printf '%s\n' "${times[@]}" | python3 -c '
import sys
v = sorted(int(x) for x in sys.stdin)
n = len(v)
def q(p):
    return v[min(n - 1, int(round(p * (n - 1))))] / 1000
print(f"drift -> repaired ({n} events, '"$JOBS"' jobs, nft flush / qdisc del alternating): "
      f"median {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, max {v[-1]/1000:.1f} ms")
'
echo "agent CPU per repair: $(python3 -c "print(f'{($cpu1 - $cpu0) / $CLK / $EVENTS * 1000:.2f}')") ms" \
  "($((cpu1 - cpu0)) ticks over $EVENTS events)"

# 3: idle CPU with IDLE_JOBS jobs.
for j in $(seq $((JOBS + 1)) "$IDLE_JOBS"); do
  tool apply $((1000 + j)) --class training --rate 10Mbit --ceil 1Gbit --dscp AF41 >/dev/null || fail "apply $j"
done
for window in 0 1; do
  write_config $window
  start_agent
  sleep 2  # the start converge and the first window pass
  c0=$(cpu_ticks "$AGENT_PID")
  sleep "$IDLE_SECONDS"
  c1=$(cpu_ticks "$AGENT_PID")
  what=$([ $window = 1 ] && echo "holding the line + a signal window" || echo "holding the line")
  echo "idle agent, $IDLE_JOBS jobs, $what: $(python3 -c "print(f'{($c1 - $c0) / $CLK * 3600 / $IDLE_SECONDS:.2f}')") s CPU per hour" \
    "($((c1 - c0)) ticks in ${IDLE_SECONDS}s)"
  stop_agent
done
echo "converges and repairs in the last run: $(grep -c 'repaired' "$STATE_ROOT/agent.log") repair lines logged"
