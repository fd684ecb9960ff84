#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lanesctl report on the real cluster with a real Prometheus: Debian's
# prometheus (on loopback in train1's namespace) scrapes Lanes' node textfile
# (`lanesctl status --prometheus`, through prometheus-node-exporter) and the
# inference probe's latency histogram (inference_probe load --metrics) while
# the probe measures infer1 and a training job sends through its HTB class.
# The report must say:
#   - no training bytes in the row before the job, bytes > 0 after it, and the
#     rows' sum equal to the job's own counter in the textfile (exact: the
#     report takes counter deltas, not extrapolated increase());
#   - the requests, p99 and SLO attainment of the probe's real histogram
#     (recomputed here from the raw bucket series), MET consistent with them;
#   - the same numbers in --parsable, --json and the table; a PNG of 960x540.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
for t in prometheus prometheus-node-exporter gnuplot; do
    command -v "$t" >/dev/null || { echo "FAIL: $t missing (contrib/install-deps.sh)"; exit 1; }
done
PROBE=$LANES_BUILDDIR/bench/inference_probe
E2E_MODE=offpeak e2e_start_cluster
conf=$CLUSTER_CONF_DIR/lanes.toml
mon=$CLUSTER_DIR/report
mkdir -p "$mon/textfile" "$mon/data"
mon_pids=()
stop_monitoring() {
    local p
    for p in "${mon_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${mon_pids[@]}"; do
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$p" 2>/dev/null
    done
    mon_pids=()
}
trap 'stop_monitoring; e2e_on_exit' EXIT
train_ns=/run/netns/${CLUSTER_PREFIX}train1
infer_ip=${CLUSTER_NODE_IP[infer1]}

# Lanes' textfile every second (what lanes-metrics.service does every 15 s), bounded.
prom_file=$mon/textfile/lanes.prom
(
    for _ in $(seq 150); do
        cluster_run_node train1 "$E2E_LANESCTL" --config "$conf" status --node train1 \
            --prometheus "$prom_file" 2>>"$mon/lanesctl.err"
        sleep 1
    done
) &
mon_pids+=($!)
# The inference service on infer1 and its measured clients on train1 (bounded).
cluster_run_node infer1 "$PROBE" serve --listen "$infer_ip:7100" --exit-after 150 >"$mon/serve.log" 2>&1 &
mon_pids+=($!)
sleep 0.3
nsenter --net="$train_ns" -- "$PROBE" load --connect "$infer_ip:7100" --rate 200 --duration 120 \
    --connections 2 --metrics 127.0.0.1:9101 --json >"$mon/load.json" 2>"$mon/load.err" &
mon_pids+=($!)
e2e_start_monitoring "$mon" "" '  - job_name: probe
    static_configs:
      - targets: ["127.0.0.1:9101"]'
PROM=http://127.0.0.1:9090

query() { e2e_prom_query "$1"; }  # PROMQL -> the API's JSON answer
value() {  # PROMQL -> the first series' value, or nothing
    query "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null
}
wait_value() {  # PROMQL SECONDS: until the query has a non-zero answer
    local _ v
    for _ in $(seq $(($2 * 2))); do
        v=$(value "$1")
        [[ -n $v && $v != 0 ]] && return 0
        sleep 0.5
    done
    return 1
}
e2e_check "prometheus scrapes the probe's histogram" wait_value 'sum(lanes_probe_latency_seconds_count)' 30
e2e_check "prometheus scrapes Lanes' textfile" wait_value 'count(lanes_jobs)' 30

# Row 1: [t_a, t_b) without training; row 2 on: the training job.
step=8
t_a=$(($(date +%s) + 1))
t_b=$((t_a + step))
while (($(date +%s) < t_b)); do sleep 0.2; done
cluster_run_node infer1 iperf3 -s -1 -D -p 5201 --logfile "$mon/iperf-s.log"
id=$(cluster_sbatch -J train-report -w train1 -p training -o /dev/null \
    --wrap "sleep 2; iperf3 -c $infer_ip -p 5201 -t 3 >/dev/null; touch $mon/iperf.done; sleep 300")
e2e_check "training job $id starts" cluster_wait_job "$id" RUNNING 30
job_bytes() {  # the job's bytes in the textfile, all NICs
    awk -v id="$id" '$1 ~ "^lanes_job_bytes_total[{]" && index($1, "hpc_job=\"" id "\"") { s += $2 } END { printf "%.0f\n", s }' "$prom_file"
}
job_drops() {
    awk -v id="$id" '$1 ~ "^lanes_job_drops_total[{]" && index($1, "hpc_job=\"" id "\"") { s += $2 } END { printf "%.0f\n", s }' "$prom_file"
}
# Once iperf3 is done, two more textfile rewrites: the counter is final.
for _ in $(seq 300); do [[ -e $mon/iperf.done ]] && break; sleep 0.1; done
e2e_check "the job's iperf3 finished" test -e "$mon/iperf.done"
for _ in 1 2; do
    m=$(stat -c %Y.%y "$prom_file")
    for _ in $(seq 100); do [[ $(stat -c %Y.%y "$prom_file") != "$m" ]] && break; sleep 0.1; done
done
final=$(job_bytes)
final_drops=$(job_drops)
scraped() { [[ $(value "sum(lanes_job_bytes_total{hpc_job=\"$id\"})") == "$final" ]]; }
for _ in $(seq 20); do scraped && break; sleep 0.5; done
e2e_check "Prometheus scraped the job's final counter ($final bytes)" scraped
t_c=$(($(date +%s) + 1))
while (($(date +%s) < t_c)); do sleep 0.2; done

start=$(date +%s.%N)
run_report() {
    cluster_run_node train1 env TZ=UTC "$E2E_LANESCTL" --config "$conf" report --prometheus "$PROM" --slo 2ms \
        --from "@$t_a" --to "@$t_c" "$@"
}
run_report --step ${step}s --parsable >"$mon/report.txt" 2>"$mon/report.err"
rc=$?
echo "--- lanesctl report --step ${step}s --parsable"; cat "$mon/report.txt" "$mon/report.err"
e2e_check "report exits 0" test "$rc" -eq 0
e2e_check "report: no training bytes in the row before the job, bytes > 0 in a row with it, rows add up to the job's counter" \
    python3 - "$mon/report.txt" "$t_a" "$t_b" "$final" "$final_drops" <<'PY'
import sys, datetime
lines = open(sys.argv[1]).read().splitlines()
assert lines[0].startswith("BEGIN|END|WINDOWS|TRAINING_BYTES|TRAINING_DROPS|"), lines[0]
rows = [l.split("|") for l in lines[1:]]
t_a, t_b, final, drops = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ts = lambda s: int(datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp())
assert ts(rows[0][0]) == t_a and ts(rows[0][1]) == t_b, rows[0]
assert int(rows[0][3]) == 0, ("bytes before the job", rows[0])
assert any(int(r[3]) > 0 for r in rows[1:]), rows
total = sum(int(r[3]) for r in rows)
assert total == final, (total, final)
assert sum(int(r[4]) for r in rows) == drops, rows
for r in rows:
    assert int(r[5]) > 0 and r[6] != "", ("every row has probe requests and a p99", r)
    assert r[9] == ("yes" if float(r[6]) <= float(r[7]) else "no"), r
PY

# One row over the whole range: the histogram's numbers recomputed from the raw buckets.
run_report --window peak --json >"$mon/report.json" 2>>"$mon/report.err"
e2e_check "report --json exits 0" test $? -eq 0
raw_end=$(query "sum by (le) (lanes_probe_latency_seconds_bucket @ $t_c)")
raw_begin=$(query "sum by (le) (last_over_time(lanes_probe_latency_seconds_bucket[5m] @ $t_a))")
e2e_check "report's requests, p99 and attainment are the probe's histogram's" \
    python3 - "$mon/report.json" "$raw_begin" "$raw_end" "$final" <<'PY'
import json, math, sys
doc = json.load(open(sys.argv[1]))
assert len(doc["rows"]) == 1, doc
row = doc["rows"][0]
def buckets(text):
    return {float(r["metric"]["le"]): float(r["value"][1]) for r in json.loads(text)["data"]["result"]}
b0, b1 = buckets(sys.argv[2]), buckets(sys.argv[3])
delta = sorted((le, b1[le] - b0.get(le, 0)) for le in b1)
total = delta[-1][1]
assert math.isinf(delta[-1][0]) and total > 0, delta
assert row["inference_requests"] == round(total), (row, total)
def quantile(q):
    rank, lo, below = q * total, 0.0, 0.0
    for le, c in delta:
        if c >= rank:
            return lo if math.isinf(le) else lo + (le - lo) * (rank - below) / (c - below)
        lo, below = le, c
def within(t):
    lo, below = 0.0, 0.0
    for le, c in delta:
        if math.isinf(le): return below / total
        if t <= le: return (below + (c - below) * (t - lo) / (le - lo)) / total
        lo, below = le, c
assert abs(row["p99_seconds"] - quantile(0.99)) < 1e-9, (row, quantile(0.99))
assert abs(row["attainment"] - within(0.002)) < 1e-9, (row, within(0.002))
assert row["slo_met"] == (row["p99_seconds"] <= 0.002), row
assert row["training_bytes"] == int(sys.argv[4]), row
assert doc["slo_seconds"] == 0.002 and doc["class"] == "training", doc
print("p99 %.3f ms, %.2f%% within 2 ms, %d requests" % (row["p99_seconds"] * 1e3, row["attainment"] * 100, total))
PY
run_report --step ${step}s --noheader >"$mon/report.human" 2>>"$mon/report.err"
e2e_check "the table has the same rows, no header" \
    bash -c "[ \$(wc -l <'$mon/report.human') -eq \$((\$(wc -l <'$mon/report.txt') - 1)) ] && ! grep -q BEGIN '$mon/report.human'"

# --prometheus SIGNAL: a [signals.NAME]'s URL (and TLS, token) serve as well; the same rows.
cp "$conf" "$mon/lanes.toml"
cat >>"$mon/lanes.toml" <<TOML

[signals.prom]
url = "$PROM"
query = "up"
TOML
cluster_run_node train1 env TZ=UTC "$E2E_LANESCTL" --config "$mon/lanes.toml" report --prometheus prom --slo 2ms \
    --from "@$t_a" --to "@$t_c" --step ${step}s --parsable >"$mon/report-signal.txt" 2>>"$mon/report.err"
e2e_check "--prometheus prom (a [signals.NAME]) gives the same rows" cmp "$mon/report.txt" "$mon/report-signal.txt"

png=$mon/report.png
run_report --step ${step}s --plot "$png" >/dev/null 2>>"$mon/report.err"
e2e_check "report --plot exits 0" test $? -eq 0
e2e_check "the plot is a PNG of 960x540" python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n" and d[12:16] == b"IHDR", d[:16]
assert struct.unpack(">II", d[16:24]) == (960, 540), struct.unpack(">II", d[16:24])
' "$png"
end=$(date +%s.%N)
echo "report runs took $(python3 -c "print(round($end - $start, 1))") s"

# Fail closed: Prometheus unreachable, a bad --prometheus.
cluster_run_node train1 "$E2E_LANESCTL" --config "$conf" report --prometheus http://127.0.0.1:9 --slo 2ms \
    --from "@$t_a" --to "@$t_c" >/dev/null 2>"$mon/down.err"
rc=$?
e2e_check "Prometheus down: exit 3 naming the URL ($(cat "$mon/down.err"))" \
    bash -c "[ $rc -eq 3 ] && grep -q 'lanesctl: report: http://127.0.0.1:9: ' '$mon/down.err'"
"$E2E_LANESCTL" --config "$conf" report --prometheus nowhere --slo 2ms >/dev/null 2>"$mon/bad.err"
rc=$?
e2e_check "--prometheus nowhere: exit 2 naming the option" \
    bash -c "[ $rc -eq 2 ] && grep -q \"^lanesctl: --prometheus: 'nowhere' is neither\" '$mon/bad.err'"

stop_monitoring
cluster_run_ctl scancel "$id"
cluster_wait_job "$id" CANCELLED 30 >/dev/null
e2e_finish
