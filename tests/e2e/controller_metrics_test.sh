#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The controller's metrics ([policy] metrics_file) on a real cluster, at peak:
# a user's plain job falls to default_class training and is deferred past the
# peak window, an "infer-" job goes to inference, a job the policy refuses and
# a --lanes-class the user may not use are rejected; the file counts each per
# class, counts the reload, and passes `promtool check metrics`.
# Before the controller metrics the file held only the policy workers' counters.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
command -v promtool >/dev/null || { echo "FAIL: promtool not found (apt-get install prometheus)"; exit 1; }
e2e_pre_start() {
    sed -i "s|^on_error = \"reject\"\$|on_error = \"reject\"\nmetrics_file = \"$1/controller.prom\"|" "$1/lanes.toml"
}
e2e_start_cluster
user=$(cluster_test_user)
prom=$CLUSTER_CONF_DIR/controller.prom
e2e_check "the test lanes.toml sets metrics_file" grep -q '^metrics_file = ' "$CLUSTER_CONF_DIR/lanes.toml"

submit() { cluster_run_as "$user" sbatch --parsable --hold -o /dev/null "$@" --wrap true 2>&1; }
out=$(submit -J plain)
e2e_check "the plain job is deferred at peak ($out)" grep -q 'lanes: .*deferred' <<<"$out"
out=$(submit -J infer-metrics)
e2e_check "the inference job is accepted ($out)" grep -qE '^[0-9]+' <<<"$out"
out=$(submit -J refuse-me)
e2e_check "the policy refuses refuse-me ($out)" grep -q 'refuse-me are not allowed' <<<"$out"
out=$(submit -J other --lanes-class=vip)
e2e_check "--lanes-class=vip is refused for $user ($out)" grep -q 'lanes' <<<"$out"

# The plugin's thread rewrites the file every 10 s.
has() { grep -qxF "$1" "$prom"; }
e2e_wait_until 40 has 'lanes_controller_jobs_classified_total{class="inference"} 1'
e2e_check "the file passes promtool check metrics" bash -c "promtool check metrics <'$prom'"
e2e_check "training: one job classified" has 'lanes_controller_jobs_classified_total{class="training"} 1'
e2e_check "training: deferred out of the peak" has 'lanes_controller_jobs_deferred_total{class="training"} 1'
e2e_check "training: by default_class" has 'lanes_controller_jobs_defaulted_total{class="training"} 1'
e2e_check "inference: one job classified" has 'lanes_controller_jobs_classified_total{class="inference"} 1'
e2e_check "inference: not deferred" has 'lanes_controller_jobs_deferred_total{class="inference"} 0'
rejected=$(awk '$1 ~ /^lanes_controller_jobs_rejected_total[{]/ { s += $2 } END { print s + 0 }' "$prom")
e2e_check "two jobs rejected in all ($rejected)" test "$rejected" = 2
e2e_check "the policy's refusal counted without a class" has 'lanes_controller_jobs_rejected_total{class=""} 1'
e2e_check "the refused --lanes-class counted for vip" has 'lanes_controller_jobs_rejected_total{class="vip"} 1'
e2e_check "no reload yet" has 'lanes_controller_last_reload_success_timestamp_seconds 0'

# A changed policy is reloaded: counted, with its time.
policy=$CLUSTER_CONF_DIR/policy.lua
rewrite() { cp -- "$policy" "$policy.new" && echo '-- changed' >>"$policy.new" && mv -- "$policy.new" "$policy"; }
e2e_check "slurmctld reloaded the changed policy" e2e_reload rewrite
e2e_wait_until 40 has 'lanes_reloads_total{outcome="done"} 1'
e2e_check "the reload is counted" has 'lanes_reloads_total{outcome="done"} 1'
e2e_check "its time is set" grep -qE '^lanes_controller_last_reload_success_timestamp_seconds [1-9][0-9]+$' "$prom"
e2e_check "the file still passes promtool" bash -c "promtool check metrics <'$prom'"
cat "$prom"
cluster_run_ctl scancel --quiet --user "$user" 2>/dev/null
e2e_finish
