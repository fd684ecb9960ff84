#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The node agent in a real network namespace with real HTB classes, following a
# real Prometheus (in the namespace, scraping an exporter whose value the test
# sets): demand rises -> the training job's ceil is tightened (one class change;
# the inference job is untouched); a job that starts while busy is tightened,
# and one that ends is not re-created; demand falls -> normal ceil; Prometheus
# dies -> the signal goes stale -> the window's safe setting (busy); SIGTERM ->
# every normal ceil restored. Asserts kernel state and the agent's counters.
SRCDIR=${LANES_SRCDIR:-$(dirname "$0")/../..}
. "$SRCDIR/tests/net/common.sh"
IN_NS=$NA
source "$SRCDIR/tests/signals/common.sh"
command -v curl >/dev/null || fail "curl not installed"

counter() {  # PROM-LINE-PREFIX -> value in lanes_agent.prom
  grep -F "$1" "$METRICS" 2>/dev/null | awk '{print $2}'
}

tool apply 21 --class training --rate 100Mbit --ceil 1Gbit >/dev/null || fail "apply 21"
tool apply 22 --class inference --rate 100Mbit --ceil 1Gbit >/dev/null || fail "apply 22"
[ "$(job_ceil_of 21)" = 1Gbit ] || fail "job 21 starts with ceil $(job_ceil_of 21)"

start_fake exporter
start_prometheus "127.0.0.1:$FAKE_PORT_exporter"
write_agent_toml <<TOML
[signals.demand]
url = "$PROM_URL"
query = "max(lanes_test_demand)"
interval = "1s"
timeout = "500ms"
stale_after = "4s"
[windows.busy]
signal = "demand"
above = 10
until_below = 5
for = "1s"
when_unknown = "busy"
TOML
start_agent
# Until the first value arrives the window is busy (when_unknown); then idle.
wait_for "job 21 at its normal ceil" 20 job_ceil_is 21 1Gbit
grep -q 'lanes_agent_window_busy{window="busy"} 0' "$METRICS" || fail "window not idle: $(cat "$METRICS")"
base_busy=$(counter 'lanes_agent_shifts_total{class="training",to="busy"}'); base_busy=${base_busy:-0}
base_normal=$(counter 'lanes_agent_shifts_total{class="training",to="normal"}'); base_normal=${base_normal:-0}

echo 50 >"$T/value"
wait_for "job 21 tightened" 30 job_ceil_is 21 200Mbit
[ "$(job_ceil_of 22)" = 1Gbit ] || fail "inference job 22 was shifted: $(job_ceil_of 22)"
[ "$(counter 'lanes_agent_shifts_total{class="training",to="busy"}')" = $((base_busy + 1)) ] || fail "busy shifts: $(cat "$METRICS")"
grep -q "JobId=21 (training) on $DEV: ceil 1Gbit -> 200Mbit" "$T/agent.log" || fail "no shift line: $(cat "$T/agent.log")"
echo "ok: busy: job 21 ceil 200Mbit, job 22 1Gbit"

# A job that starts while busy is tightened; one that ends is left alone: jobs
# 21 and 22 still run, so its class is parked (nodes.parked_classes: the
# parked minimum, a record in the state dir), and the agent, which changes
# only the classes of jobs with state files, neither re-creates nor re-raises it.
tool apply 23 --class training --rate 100Mbit --ceil 1Gbit >/dev/null || fail "apply 23"
wait_for "job 23 tightened" 20 job_ceil_is 23 200Mbit
tool remove 23 || fail "remove 23"
sleep 2.5
[ "$(job_ceil_of 23)" = 8Kbit ] && [ -f "$STATE/parked/0017" ] ||
  fail "the agent changed job 23's class after its epilog (ceil now '$(job_ceil_of 23)', parked is 8Kbit): $(ls "$STATE/parked")"
grep -q "JobId=23 .*200Mbit -> \|JobId=23 .* -> 1Gbit" "$T/agent.log" && fail "the agent shifted job 23 after its epilog: $(grep JobId=23 "$T/agent.log")"
echo "ok: a new job is tightened, an ended one's parked class is left alone"

echo 0 >"$T/value"
wait_for "job 21 back to normal" 30 job_ceil_is 21 1Gbit
[ "$(counter 'lanes_agent_shifts_total{class="training",to="normal"}')" = $((base_normal + 1)) ] || fail "normal shifts: $(cat "$METRICS")"
echo "ok: demand fell: job 21 ceil 1Gbit"

# Prometheus gone: stale after 4 s, then when_unknown = busy (the safe side).
kill "$PROM_PID"; wait "$PROM_PID" 2>/dev/null
wait_for "stale signal -> safe setting" 30 job_ceil_is 21 200Mbit
grep -q 'signal demand: no usable value (stale' "$T/agent.log" || fail "no stale line: $(cat "$T/agent.log")"
grep -q 'signal demand: .*query failed' "$T/agent.log" || fail "no query-failed line"
echo "ok: Prometheus down: stale -> busy (when_unknown)"

stop_agent
[ "$(job_ceil_of 21)" = 1Gbit ] || fail "after stop: job 21 ceil $(job_ceil_of 21) (kernel state left behind)"
[ "$(job_ceil_of 22)" = 1Gbit ] || fail "after stop: job 22 ceil $(job_ceil_of 22)"
grep -q 'SIGTERM: restoring normal ceils' "$T/agent.log" || fail "no stop line"
echo "ok: SIGTERM: normal ceils restored"
tool remove 21 >/dev/null; tool remove 22 >/dev/null
echo "PASS"
