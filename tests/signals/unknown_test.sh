#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A signal that is unknown protects inference by default: a window that follows
# a signal and says nothing about when_unknown is busy while the API answers
# garbage, answers with no series (the series went stale), or is down, and the
# node agent tightens the training job's ceil in each case (real HTB class in a
# network namespace). `lanesctl check` says which setting applies, `lanesctl
# signals` says why the value is unusable. The API is tests/signals/fake_api.py,
# its answer set through the value file.
SRCDIR=${LANES_SRCDIR:-$(dirname "$0")/../..}
. "$SRCDIR/tests/net/common.sh"
IN_NS=$NA
source "$SRCDIR/tests/signals/common.sh"

window_busy() { grep -q "lanes_agent_window_busy{window=\"busy\"} $1" "$METRICS"; }

start_fake api
write_agent_toml <<TOML
[signals.demand]
url = "http://127.0.0.1:$FAKE_PORT_api/value"
query = "demand"
interval = "1s"
timeout = "500ms"
stale_after = "3s"
[windows.busy]
signal = "demand"
above = 10
until_below = 5
for = "1s"
TOML

# lanesctl check: which setting applies while the signal is unknown.
"$LANESCTL" check --config "$T/lanes.toml" >"$T/check.out" 2>&1 || fail "check: $(cat "$T/check.out")"
grep -qF 'window busy follows signal demand; while demand is unknown (API down, stale, or a garbage answer): busy (the default: protects inference)' \
  "$T/check.out" || fail "check does not say what applies: $(cat "$T/check.out")"
echo "ok: lanesctl check: $(grep 'window busy' "$T/check.out")"

# lanesctl signals: a garbage answer -> the window is busy, and why.
echo garbage >"$T/value"
$NA "$LANESCTL" signals --config "$T/lanes.toml" --json >"$T/signals.json" 2>&1
python3 - "$T/signals.json" <<'PY' || fail "lanesctl signals on garbage: $(cat "$T/signals.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
w = doc["windows"][0]
s = doc["signals"][0]
assert w["busy"] is True, w
assert w["when_unknown"] == "busy" and w["when_unknown_default"] is True, w
assert "never fetched successfully" in w["reason"] and "when_unknown = busy, the default" in w["reason"], w
assert s["source"] == "none" and s["last_error"], s
print("ok: lanesctl signals on garbage: window busy:", w["reason"])
PY

tool apply 21 --class training --rate 100Mbit --ceil 1Gbit >/dev/null || fail "apply 21"
tool apply 22 --class inference --rate 100Mbit --ceil 1Gbit >/dev/null || fail "apply 22"
echo 0 >"$T/value"
start_agent
wait_for "job 21 at its normal ceil" 20 job_ceil_is 21 1Gbit
wait_for "window idle" 20 window_busy 0

# Each way of being unknown, from idle: busy (the default), the training job
# tightened, inference untouched; a good value again releases it.
n=0
for fault in garbage empty error; do
  n=$((n + 1))
  echo "$fault" >"$T/value"
  wait_for "$fault: stale -> busy -> job 21 tightened" 30 job_ceil_is 21 200Mbit
  window_busy 1 || fail "$fault: window not busy: $(cat "$METRICS")"
  [ "$(job_ceil_of 22)" = 1Gbit ] || fail "$fault: inference job 22 was shifted: $(job_ceil_of 22)"
  [ "$(grep -c 'window busy begins: no usable value of demand (stale since .*: busy (when_unknown = busy, the default)' "$T/agent.log")" -eq $n ] ||
    fail "$fault: no begin line naming the stale value and the default: $(grep 'window busy' "$T/agent.log")"
  echo "ok: $fault: $(grep 'window busy begins' "$T/agent.log" | tail -1 | sed 's/.*window busy/window busy/')"
  echo 0 >"$T/value"
  wait_for "$fault: good value again -> job 21 back to normal" 30 job_ceil_is 21 1Gbit
done

# The API down altogether.
for pid in $STARTED_PIDS; do [ "$pid" = "$AGENT" ] || kill "$pid" 2>/dev/null; done
wait_for "API down: stale -> busy -> job 21 tightened" 30 job_ceil_is 21 200Mbit
window_busy 1 || fail "API down: window not busy"
grep -q 'signal demand: .*query failed: .*Failed to connect' "$T/agent.log" || fail "no connect failure line: $(cat "$T/agent.log")"
echo "ok: API down: $(grep 'window busy begins' "$T/agent.log" | tail -1 | sed 's/.*window busy/window busy/')"

stop_agent
[ "$(job_ceil_of 21)" = 1Gbit ] || fail "after stop: job 21 ceil $(job_ceil_of 21)"
tool remove 21 >/dev/null; tool remove 22 >/dev/null
echo "PASS"
