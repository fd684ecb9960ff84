#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# contrib/prometheus/lanes-alerts.yml: promtool accepts it, and its rules fire
# (and stay quiet) on synthetic series shaped like lanesctl's metrics: drops in
# an inference class break the SLO, training drops at its cap do not; a
# standing inference queue warns; a stale textfile warns. The Grafana dashboard
# is valid JSON, uses only hpc_job, never a "job" label of its own, and has
# panels for the controller, the agent and the parked pool.
set -uo pipefail
: "${LANES_SRCDIR:?run through make check}"
command -v promtool >/dev/null || { echo "FAIL: promtool missing (apt-get install prometheus)"; exit 1; }
rules=$LANES_SRCDIR/contrib/prometheus/lanes-alerts.yml
dash=$LANES_SRCDIR/contrib/grafana/lanes-dashboard.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

promtool check rules "$rules" || { echo "FAIL: promtool check rules"; failed=1; }

cat >"$tmp/test.yml" <<YAML
rule_files: ["$rules"]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'lanes_job_drops_total{instance="n1:9100",hpc_job="42",class="inference",device="eth0",host="gpu1"}'
        values: '0 0 0 60 120 180 240 300 360 420 480 540 600'
      - series: 'lanes_job_drops_total{instance="n1:9100",hpc_job="7",class="training",device="eth0",host="gpu1"}'
        values: '0+6000x12'
      - series: 'lanes_job_backlog_bytes{instance="n2:9100",hpc_job="43",class="inference",device="eth0",host="gpu2"}'
        values: '1500x12'
      - series: 'lanes_job_backlog_bytes{instance="n2:9100",hpc_job="44",class="inference",device="eth0",host="gpu2"}'
        values: '0 1500 0 1500 0 1500 0 1500 0 1500 0 1500 0'
      - series: 'node_textfile_mtime_seconds{instance="n3",file="/var/lib/prometheus/node-exporter/lanes.prom"}'
        values: '0x12'
    alert_rule_test:
      - eval_time: 10m
        alertname: LanesInferenceDrops
        exp_alerts:
          - exp_labels: {severity: critical, instance: "n1:9100", host: gpu1, hpc_job: "42", device: eth0}
            exp_annotations:
              summary: "Inference job 42 drops packets on gpu1 eth0"
              description: "The inference class of Slurm job 42 dropped 1 packets/s over 5 minutes. Its HTB ceil is too low for its traffic, or the link is oversubscribed by classes above it."
      - eval_time: 2m
        alertname: LanesInferenceDrops
        exp_alerts: []
      - eval_time: 12m
        alertname: LanesInferenceBacklog
        exp_alerts:
          - exp_labels: {severity: warning, instance: "n2:9100", host: gpu2, hpc_job: "43", class: inference, device: eth0}
            exp_annotations:
              summary: "Inference job 43 has a standing queue on gpu2"
              description: "1.465kiB have been queued in the inference class of job 43 on eth0 for 5 minutes or more."
      - eval_time: 12m
        alertname: LanesTrainingDrops
        exp_alerts: []
      - eval_time: 12m
        alertname: LanesMetricsStale
        exp_alerts:
          - exp_labels: {severity: warning, instance: n3, file: /var/lib/prometheus/node-exporter/lanes.prom}
            exp_annotations:
              summary: "Lanes metrics on n3 are 12m 0s old"
              description: "Check \`systemctl status lanes-metrics.timer lanes-metrics.service\` on the node."
YAML
out=$(promtool test rules "$tmp/test.yml" 2>&1) || { echo "$out"; echo "FAIL: promtool test rules"; failed=1; }

python3 - "$dash" <<'PY' || failed=1
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
assert exprs, "no panel queries"
for e in exprs:
    assert not re.search(r'[{,(]\s*job\s*[=!~]', e) and " job)" not in e and "(job," not in e, "panel uses the job label: " + e
titles = " ".join(p["title"] for p in d["panels"])
for want in ("by class", "by job", "Drops", "Overlimits", "SLO"):
    assert want in titles, "no panel for " + want
# The controller, the agent and the parked pool have panels too.
for metric in ("lanes_controller_jobs_classified_total", "lanes_controller_jobs_deferred_total",
               "lanes_controller_jobs_rejected_total", "lanes_controller_jobs_defaulted_total",
               "lanes_policy_overruns_total", "lanes_reloads_total", "lanes_agent_repairs_total",
               "lanes_agent_last_converge_duration_seconds", "lanes_parked_classes"):
    assert any(metric in e for e in exprs), "no panel queries " + metric
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "panel ids repeat: %s" % ids
print("ok: dashboard has %d queries" % len(exprs))
PY
((failed)) && exit 1
echo "ok: alert rules"
