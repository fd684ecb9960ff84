#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lanes-agent holds the line (#19): with the agent running and nothing else
# touching the node, what breaks a running job's shaping comes back, each
# asserted on the kernel (tc classes and ceils, nft marks) and on the wire:
#   - `nft flush ruleset`: the job's packets leave with its DSCP again and go
#     through its HTB class (counters grow);
#   - `tc qdisc del dev X root`, and a link down/up with the root deleted while
#     down: every job's class is back;
#   - a ceil changed by hand (what a stale reapply does) during a busy window:
#     the busy ceil is back;
#   - kill -9 and a restart during the busy window: the busy ceil stays, and a
#     flush made while no agent ran is repaired at start;
#   - the metrics file passes `promtool check metrics` and counts the repairs by
#     object and cause; the agent's own repairs start no further repairs;
#     `lanesctl status` shows the agent's last converge.
# The busy window's signal has no server: unknown -> busy (when_unknown).
# resync_interval is 1h so that notifications alone drive the repairs.
. "${LANES_SRCDIR:-$(dirname "$0")/../..}/tests/net/common.sh"
AGENT=$BUILDDIR/agent/lanes-agent
[ -x "$AGENT" ] || fail "$AGENT not built"
for cmd in tcpdump python3 promtool; do command -v $cmd >/dev/null || fail "$cmd not found"; done

PROM_DIR=$STATE_ROOT/textfile
METRICS=$PROM_DIR/lanes_agent.prom
LOG=$STATE_ROOT/agent.log
wait_for() {  # DESC SECONDS CMD...
  local desc=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs * 10; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "--- agent log:"; tail -30 "$LOG"
  fail "timed out after ${secs}s waiting for $desc"
}
class_there() { $NA tc class show dev "$DEV" classid "1a4e:$(printf %x "$1")" | grep -q .; }
all_ok() { case "$(tool check)" in ok*) return 0 ;; esac; return 1; }
metric() {  # NAME{LABELS} -> value (0 when absent)
  local v
  v=$(grep -F "$1 " "$METRICS" 2>/dev/null | awk '{print $2}')
  echo "${v:-0}"
}
marked() { pcap_count "udp dst port $1 and (ip[1] & 0xfc) = 0x88"; }
class_packets() { tool counters "$1" | awk '{print $3}'; }
start_agent() {
  $NA "$AGENT" --config "$STATE_ROOT/lanes.toml" --node n1 2>>"$LOG" &
  AGENT_PID=$!
  STARTED_PIDS="$STARTED_PIDS $AGENT_PID"
}
dscp_reaches_wire() {  # PORT: job 21's 20 datagrams all leave with AF41 and go through its class
  local before after n
  before=$(class_packets 21)
  capture_start "wire$1" "udp dst port $1"
  tool run 21 -- $SEND 4 "$1" || fail "send in job 21"
  capture_stop
  n=$(marked "$1")
  after=$(class_packets 21)
  echo "job 21: $n/20 packets AF41, class packets $before -> $after"
  [ "$n" -eq 20 ] || fail "job 21's packets not marked AF41 ($n/20)"
  [ "$after" -ge $((before + 20)) ] || fail "job 21's packets do not go through its HTB class ($before -> $after)"
}

tool apply 21 --class training --rate 100Mbit --ceil 1Gbit --dscp AF41 >/dev/null || fail "apply 21"
tool apply 22 --class inference --rate 100Mbit --ceil 1Gbit --dscp CS2 >/dev/null || fail "apply 22"
cat >"$STATE_ROOT/lanes.toml" <<TOML
default_class = "training"
[signals.demand]
url = "http://127.0.0.1:9"
query = "max(lanes_test_demand)"
interval = "1s"
timeout = "500ms"
stale_after = "2s"
[windows.busy]
signal = "demand"
above = 10
until_below = 5
when_unknown = "busy"
[classes.training]
rate = "100Mbit"
ceil = "1Gbit"
dscp = "AF41"
busy_window = "busy"
busy_ceil = "200Mbit"
[classes.inference]
rate = "100Mbit"
ceil = "1Gbit"
dscp = "CS2"
[nodes]
state_dir = "$STATE"
cgroup_root = "$CGROOT"
[[nodes.nic]]
device = "$DEV"
link_speed = "10Gbit"
[agent]
textfile_dir = "$PROM_DIR"
resync_interval = "1h"
TOML

start_agent
wait_for "the agent's metrics" 20 test -s "$METRICS"
wait_for "job 21 at the busy ceil (signal unknown -> busy)" 20 job_ceil_is 21 200Mbit
job_ceil_is 22 1Gbit || fail "inference job 22 shifted: $(job_ceil_of 22)"
echo "ok: agent running, job 21 at the busy ceil"

# 1. nft flush ruleset: marks and the busy ceil come back.
$NA nft flush ruleset || fail "nft flush ruleset"
wait_for "marks back after nft flush ruleset" 30 all_ok
wait_for "job 21 still at the busy ceil" 10 job_ceil_is 21 200Mbit
dscp_reaches_wire 5601
wait_for "the repair counted" 10 test "$(metric 'lanes_agent_repairs_total{object="nft_table",cause="missing"}')" -ge 1
echo "ok: nft flush ruleset repaired"

# 2. The root qdisc deleted: every class back, busy ceil included.
$NA tc qdisc del dev "$DEV" root || fail "tc qdisc del"
wait_for "classes back after tc qdisc del" 30 all_ok
wait_for "job 21 at the busy ceil after tc qdisc del" 10 job_ceil_is 21 200Mbit
wait_for "job 22 at its ceil" 10 job_ceil_is 22 1Gbit
dscp_reaches_wire 5602
echo "ok: tc qdisc del root repaired"

# 3. Link down and up, and the root deleted while it was down.
$NA ip link set "$DEV" down
$NA ip link set "$DEV" up
wait_for "shaping in place after link down/up" 30 all_ok
$NA ip link set "$DEV" down
$NA tc qdisc del dev "$DEV" root 2>/dev/null
$NA ip link set "$DEV" up
$NB ip link set "$PEER" up
wait_for "classes back after the root went while the link was down" 30 all_ok
wait_for "job 21 at the busy ceil after link down/up" 10 job_ceil_is 21 200Mbit
# The neighbour entry went with the link: resolve it again before counting.
$NA $SEND 4 5699
sleep 1
dscp_reaches_wire 5603
echo "ok: link down/up repaired"

# 4. A ceil changed behind the agent's back during the busy window (what a
# reapply that rebuilds the job at its own ceil does): the busy ceil is back.
$NA tc class change dev "$DEV" parent 1a4e:1 classid 1a4e:$(printf %x 21) htb rate 100Mbit ceil 1Gbit ||
  fail "tc class change"
wait_for "busy ceil back after a ceil change" 30 job_ceil_is 21 200Mbit
wait_for "the ceil repair counted" 10 test "$(metric 'lanes_agent_repairs_total{object="class",cause="changed"}')" -ge 1
echo "ok: a changed ceil is put back during the busy window"

# 5. No feedback loop: the agent's own repairs start converges that repair
# nothing. Quiet now: the counts stay where they are.
repairs_before=$(grep '^lanes_agent_repairs_total' "$METRICS")
event_before=$(metric 'lanes_agent_converges_total{trigger="event"}')
sleep 3
[ "$(metric 'lanes_agent_converges_total{trigger="event"}')" = "$event_before" ] ||
  fail "converges go on with nothing changing ($event_before -> $(metric 'lanes_agent_converges_total{trigger="event"}')): $(grep -v "^#" "$METRICS")"
[ "$(grep '^lanes_agent_repairs_total' "$METRICS")" = "$repairs_before" ] || fail "repairs go on with nothing changing"
echo "ok: quiet node, no converge ($event_before event converges in all)"

# 6. kill -9 during the busy window: the kernel keeps the busy ceil; a flush
# while no agent runs is repaired by the next agent at start, busy ceil kept.
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
job_ceil_is 21 200Mbit || fail "job 21 lost its busy ceil when the agent was killed: $(job_ceil_of 21)"
$NA nft flush ruleset || fail "nft flush ruleset"
: >"$LOG"
start_agent
wait_for "the new agent repaired the flush" 30 all_ok
wait_for "the new agent's start converge" 20 grep -q 'lanes_agent_converges_total{trigger="start"} 1' "$METRICS"
job_ceil_is 21 200Mbit || fail "job 21 not at the busy ceil after the agent restart: $(job_ceil_of 21)"
grep -q 'repaired nft_table (missing, start)' "$LOG" || fail "no start repair line: $(cat "$LOG")"
dscp_reaches_wire 5604
echo "ok: kill -9 and restart keep the busy ceil and repair at start"

# 7. The metrics: promtool accepts them; repairs by object and cause.
promtool check metrics <"$METRICS" || fail "promtool check metrics: $(cat "$METRICS")"
$NA nft flush ruleset
$NA tc qdisc del dev "$DEV" root
wait_for "repairs after flush + qdisc del" 30 all_ok
wait_for "class repairs counted" 10 test "$(metric 'lanes_agent_repairs_total{object="class",cause="missing"}')" -ge 1
wait_for "table repairs counted" 10 test "$(metric 'lanes_agent_repairs_total{object="nft_table",cause="missing"}')" -ge 1
promtool check metrics <"$METRICS" || fail "promtool check metrics: $(cat "$METRICS")"
grep '^lanes_agent_repairs_total' "$METRICS"
grep -q '^# HELP lanes_agent_repairs_total ' "$METRICS" && grep -q '^# TYPE lanes_agent_repairs_total counter' "$METRICS" ||
  fail "no HELP/TYPE for lanes_agent_repairs_total"
echo "ok: metrics pass promtool, repairs counted by object and cause"

# lanesctl status shows the agent's last converge.
status=$($NA "$BUILDDIR/lanesctl/lanesctl" --config "$STATE_ROOT/lanes.toml" status --node n1) || fail "lanesctl status"
grep -q "^agent: pid $AGENT_PID running; last converge .*repairs" <<<"$status" || fail "no agent line in status: $status"
grep -q "^agent: last repair .*repaired" <<<"$status" || fail "no last repair in status: $status"
json=$($NA "$BUILDDIR/lanesctl/lanesctl" --config "$STATE_ROOT/lanes.toml" status --node n1 --json) || fail "status --json"
python3 -c 'import json,sys; a=json.load(sys.stdin)["agent"]; assert a["running"] and a["pid"] == int(sys.argv[1]) and a["repairs"] >= 3, a' \
  "$AGENT_PID" <<<"$json" || fail "status --json agent: $json"
echo "ok: lanesctl status shows the agent"

# 8. SIGTERM: normal ceils back.
stop_pid "$AGENT_PID"; rc=$?
[ $rc -eq 0 ] || fail "agent exit $rc: $(tail -5 "$LOG")"
job_ceil_is 21 1Gbit || fail "after SIGTERM: job 21 ceil $(job_ceil_of 21)"
echo "ok: SIGTERM restores the normal ceil"
tool remove 21 >/dev/null || fail "remove 21"
tool remove 22 >/dev/null || fail "remove 22"
echo "PASS"
