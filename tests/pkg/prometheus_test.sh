#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Lanes' node metrics end to end, with Debian's own exporters: a training job
# on a real cluster sends traffic; `lanesctl status --prometheus` (what
# lanes-metrics.service runs) writes the node's textfile; Debian's
# prometheus-node-exporter reads that directory; Debian's prometheus scrapes it
# and loads contrib/'s alert rules; a PromQL query over the HTTP API returns
# the running job's bytes by class, labelled hpc_job (not Prometheus' own
# job/instance, which stay the scrape's). Every query of the Grafana dashboard
# is evaluated too. node_exporter and prometheus run on loopback inside the
# training node's network namespace (own ports, own data dir) and are stopped
# by PID.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
for t in prometheus prometheus-node-exporter promtool; do
    command -v "$t" >/dev/null || { echo "FAIL: $t missing (apt-get install prometheus prometheus-node-exporter)"; exit 1; }
done
E2E_MODE=offpeak e2e_start_cluster
work=$CLUSTER_WORK_DIR
mon=$CLUSTER_DIR/monitoring
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

# Traffic: a bounded iperf3 run from train1 to infer1, then the job idles.
infer_ip=${CLUSTER_NODE_IP[infer1]}
cluster_run_node infer1 iperf3 -s -1 -D -p 5201 --logfile "$work/iperf-s.log"
sleep 0.5
id=$(cluster_sbatch -J train-metrics -w train1 -p training -o /dev/null \
    --wrap "iperf3 -c $infer_ip -p 5201 -t 3 >/dev/null; sleep 300")
e2e_check "training job starts" cluster_wait_job "$id" RUNNING 30

# What lanes-metrics.service does every 15 s, here every second (bounded).
prom_file=$mon/textfile/lanes.prom
(
    for _ in $(seq 120); do
        cluster_run_node train1 "$E2E_LANESCTL" --config "$CLUSTER_CONF_DIR/lanes.toml" status --node train1 \
            --prometheus "$prom_file" 2>>"$mon/lanesctl.err"
        sleep 1
    done
) &
mon_pids+=($!)
for _ in $(seq 100); do grep -q "hpc_job=\"$id\"" "$prom_file" 2>/dev/null && break; sleep 0.1; done
e2e_check "the textfile has the job's samples, labelled hpc_job" grep -q "^lanes_job_bytes_total{hpc_job=\"$id\",class=\"training\"" "$prom_file"
e2e_check "promtool check metrics finds nothing to lint in the textfile" bash -c "promtool check metrics <'$prom_file'"
e2e_check "no temporary files are left in the textfile dir" \
    bash -c "[ \"\$(ls '$mon/textfile')\" = lanes.prom ]"

# node_exporter (the textfile collector only) and prometheus, with Lanes' alert rules.
e2e_start_monitoring "$mon" "rule_files: [\"$LANES_SRCDIR/contrib/prometheus/lanes-alerts.yml\"]"
query() { e2e_prom_query "$1"; }
q="sum by (class, hpc_job, job) (lanes_job_bytes_total{hpc_job=\"$id\"})"
answer=""
for _ in $(seq 60); do
    answer=$(query "$q")
    grep -q '"result":\[{' <<<"$answer" && break
    sleep 0.5
done
echo "PromQL: $q"
echo "answer: $answer"
e2e_check "PromQL returns the running training job's bytes by class" python3 -c '
import json, sys
r = json.loads(sys.argv[1])
assert r["status"] == "success", r
res = r["data"]["result"]
assert len(res) == 1, res
m, v = res[0]["metric"], float(res[0]["value"][1])
assert m == {"class": "training", "hpc_job": sys.argv[2], "job": "node"}, m
assert v > 1e6, v   # iperf3 sent megabytes through the class
' "$answer" "$id"
raw=$(query "lanes_job_bytes_total{hpc_job=\"$id\"}")
e2e_check "the scrape's own labels are intact (job=node, instance=127.0.0.1:9100, no exported_job)" python3 -c '
import json, sys
m = json.loads(sys.argv[1])["data"]["result"][0]["metric"]
assert m["job"] == "node" and m["instance"] == "127.0.0.1:9100" and "exported_job" not in m, m
assert m["device"] == "eth0" and m["class"] == "training", m
' "$raw"

# Every Grafana panel query evaluates (dashboard variables set to "all").
e2e_check "every dashboard query is valid PromQL and answers" python3 - "$LANES_SRCDIR/contrib/grafana/lanes-dashboard.json" "${CLUSTER_PREFIX}train1" <<'PY'
import json, subprocess, sys, urllib.parse
d = json.load(open(sys.argv[1]))
def panels(ps):   # rows carry no query; a collapsed row holds its panels
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))
queries = [(p, t) for p in panels(d["panels"]) for t in p.get("targets", [])]
assert len(queries) >= 19, len(queries)
for p, t in queries:
    e = (t["expr"].replace("$__rate_interval", "30s").replace('"$instance"', '".*"')
         .replace('"$class"', '".*"').replace('"$hpc_job"', '".*"'))
    url = "http://127.0.0.1:9090/api/v1/query?" + urllib.parse.urlencode({"query": e})
    out = subprocess.run(["nsenter", "--net=/run/netns/" + sys.argv[2], "python3", "-c",
                          "import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1],timeout=5).read().decode())", url],
                         capture_output=True, text=True)
    r = json.loads(out.stdout) if out.stdout else {"status": "error", "error": out.stderr}
    assert r["status"] == "success", (p["title"], e, r)
PY
rules=$(cluster_run_node train1 python3 -c '
import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9090/api/v1/rules", timeout=5).read().decode())')
e2e_check "prometheus loaded the alert rules (5, healthy)" python3 -c '
import json, sys
g = [g for g in json.loads(sys.argv[1])["data"]["groups"] if g["name"] == "lanes"]
assert g and len(g[0]["rules"]) == 5 and all(r["health"] == "ok" for r in g[0]["rules"]), g
' "$rules"

stop_monitoring
cluster_run_ctl scancel "$id"
cluster_wait_job "$id" CANCELLED 30 >/dev/null
e2e_finish
