#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Signals against a real Prometheus (Debian's, on loopback, scraping a probe
# exporter) and a misbehaving API: every fault gives a precise error, the
# fallback is used when configured, and nothing waits longer than the signal's
# own timeout. Uses `lanesctl signals`, i.e. the same libcurl fetcher and
# parser as job_submit/lanes and the agent.
source "$(dirname "$0")/common.sh"

start_fake plain
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$T/server.key" -out "$T/server.pem" 2>/dev/null || fail "openssl (server cert)"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other-ca \
  -keyout "$T/other.key" -out "$T/other.pem" 2>/dev/null || fail "openssl (other CA)"
start_fake tls --tls "$T/server.pem" "$T/server.key"
echo 42 >"$T/value"
start_prometheus "127.0.0.1:$FAKE_PORT_plain"
wait_for "the first scrape" 30 sh -c "curl -sf -m 10 --get '$PROM_URL/api/v1/query' --data-urlencode 'query=lanes_test_demand' | grep -q '\"42\"'"
DOWN_PORT=$(free_port)

# One config per case: a signal named s, fallback where the case says so.
check_case() {  # NAME URL QUERY EXPECT_RC EXPECT_TEXT [EXTRA_TOML]
  local name=$1 url=$2 query=$3 want_rc=$4 want=$5 extra=${6:-}
  cat >"$T/$name.toml" <<TOML
default_class = "training"
[signals.s]
url = "$url"
query = '$query'
interval = "5s"
timeout = "1s"
max_body = "1MiB"
$extra
[classes.training]
TOML
  "$LANESCTL" signals --config "$T/$name.toml" --json >"$T/$name.out" 2>"$T/$name.err"
  local rc=$?
  [ $rc -eq "$want_rc" ] || fail "$name: exit $rc, expected $want_rc: $(cat "$T/$name.out" "$T/$name.err")"
  grep -qF -- "$want" "$T/$name.out" || fail "$name: expected '$want' in: $(cat "$T/$name.out")"
  echo "ok: $name: $(grep -m1 -o '"last_error": "[^"]*"' "$T/$name.out" || true)"
}

check_case value "$PROM_URL" 'max(lanes_test_demand)' 0 '"value": 42.0'
check_case scalar "$PROM_URL" 'scalar(max(lanes_test_demand)) / 2' 0 '"value": 21.0'
check_case error "$PROM_URL" 'sum(' 1 'Prometheus error (HTTP 400): bad_data'
check_case nan "$PROM_URL" 'NaN' 1 'the query returned NaN'
check_case empty "$PROM_URL" 'no_such_metric_lanes' 1 'the query returned an empty vector'
check_case several "$PROM_URL" 'label_replace(vector(1), "a", "x", "", "") or label_replace(vector(2), "a", "y", "", "")' 1 \
  'the query returned 2 series'
check_case down "http://127.0.0.1:$DOWN_PORT" 'up' 1 '"last_error": "Failed to connect to 127.0.0.1 port'
check_case slow "http://127.0.0.1:$FAKE_PORT_plain/slow" 'up' 1 'no answer within the timeout of 1000 ms'
check_case huge "http://127.0.0.1:$FAKE_PORT_plain/huge" 'up' 1 'answer larger than max_body (1 MiB); refused'
check_case http404 "http://127.0.0.1:$FAKE_PORT_plain/nothing" 'up' 1 'HTTP 404'
check_case tls_ok "https://127.0.0.1:$FAKE_PORT_tls/value" 'up' 0 '"value": 42.0' "ca_file = \"$T/server.pem\""
check_case wrong_ca "https://127.0.0.1:$FAKE_PORT_tls/value" 'up' 1 '"last_error": "TLS: ' "ca_file = \"$T/other.pem\""
# A fault with a fallback: the fallback is the value, and the error is still shown.
check_case fallback "$PROM_URL" 'NaN' 1 '"source": "fallback"' 'fallback = 7'
grep -q '"value": 7.0' "$T/fallback.out" || fail "fallback: value 7 not used: $(cat "$T/fallback.out")"
# Bearer tokens reach the server (Prometheus ignores them; a missing file is an error).
check_case token_missing "$PROM_URL" 'up' 1 'bearer_token_file /nonexistent/token: cannot open' \
  'bearer_token_file = "/nonexistent/token"'

# The probe's histogram, scraped by the real Prometheus, gives a p99.
PROBE_PORT=$(free_port)
METRICS_PORT=$(free_port)
"$BUILDDIR/bench/inference_probe" serve --listen "127.0.0.1:$PROBE_PORT" --exit-after 60 >"$T/serve.log" 2>&1 &
STARTED_PIDS="$STARTED_PIDS $!"
wait_for "probe server" 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PROBE_PORT"
"$BUILDDIR/bench/inference_probe" load --connect "127.0.0.1:$PROBE_PORT" --rate 200 --duration 40 \
  --metrics "127.0.0.1:$METRICS_PORT" >"$T/load.out" 2>"$T/load.err" &
STARTED_PIDS="$STARTED_PIDS $!"
wait_for "probe metrics" 10 curl -sf -m 10 "http://127.0.0.1:$METRICS_PORT/metrics"
curl -sf -m 10 "http://127.0.0.1:$METRICS_PORT/metrics" | grep -q '^lanes_probe_latency_seconds_bucket{le="+Inf"} ' \
  || fail "probe metrics: no histogram"
# A second Prometheus scraping the probe (the first keeps its target list).
FIRST_URL=$PROM_URL
start_prometheus "127.0.0.1:$METRICS_PORT"
P99='histogram_quantile(0.99, sum(rate(lanes_probe_latency_seconds_bucket[5s])) by (le))'
cat >"$T/p99.toml" <<TOML
default_class = "t"
[signals.p99]
url = "$PROM_URL"
query = '$P99'
[classes.t]
TOML
wait_for "a p99 from the probe's histogram" 40 sh -c "'$LANESCTL' signals --config '$T/p99.toml' --json | grep -q '\"source\": \"fresh\"'"
echo "ok: p99 of the probe via Prometheus: $(prom_query "$P99" | grep -o '"value":\[[^]]*\]')"
echo "PASS"
