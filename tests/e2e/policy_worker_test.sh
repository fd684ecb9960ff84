#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The policy runs in lanes-policy-worker processes, so a policy that runs
# where the Lua hook cannot see it in time (a loop of comparisons of 512 KiB
# strings of NUL bytes: one VM instruction each, some ms long, and the hook
# looks every 1000) never stalls
# slurmctld. On a real cluster: slurmctld starts with such a policy; a user
# whose job triggers it gets the refusal (on_error = "reject") with a message
# naming the time budget, while another user's sbatch and sinfo are answered;
# a policy whose top level hangs is refused by the reload (bounded, logged);
# a fixed policy is then picked up by the next reload.
# With the in-process engine the triggering submission spun a slurmctld
# thread under the job write lock for good: every check below timed out.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
H=$LANES_SRCDIR/tests/hostile
LIMIT=60  # seconds: only a hang gets near it
e2e_pre_start() {
    cp -- "$H/long_compare_loop.lua" "$1/policy.lua" &&
        sed -i "s|^on_error = \"reject\"\$|on_error = \"reject\"\ntime_budget = \"100ms\"\nmetrics_file = \"$1/controller.prom\"|" \
            "$1/lanes.toml"
}
E2E_POLICY_TIME_BUDGET= E2E_MODE=offpeak e2e_start_cluster
user=$(cluster_test_user)
policy=$CLUSTER_CONF_DIR/policy.lua
ctl_log=$(cluster_log slurmctld)
e2e_check "the test lanes.toml sets a 100ms time budget" grep -q '^time_budget = "100ms"' "$CLUSTER_CONF_DIR/lanes.toml"
e2e_check "slurmctld started with the hostile policy" cluster_run_ctl scontrol ping
# slurmctld starts one worker and the second in the background: with both
# up, the attack leaves one free for the other users while its own is
# replaced. Until then a job that finds no worker within the budget is
# refused, by design.
e2e_wait_until 30 grep -qE '^lanes_policy_workers_started_total [1-9]' "$CLUSTER_CONF_DIR/controller.prom"
e2e_check "both policy workers are up before the attack" \
    grep -qE '^lanes_policy_workers_started_total [1-9]' "$CLUSTER_CONF_DIR/controller.prom"

submit_as_root() {  # name [sbatch options]: prints the output; status of sbatch (124: hang)
    local name=$1
    shift
    timeout "$LIMIT" nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" env SLURM_CONF="$CLUSTER_CONF" \
        sbatch --parsable --hold -J "$name" -o /dev/null "$@" --wrap true 2>&1
}

# The attacker's job makes classify() compare long strings for good.
out=$(cluster_run_as "$user" timeout "$LIMIT" sbatch --parsable --hold -J attacker --comment=go -o /dev/null \
    --wrap true 2>&1)
rc=$?
e2e_check "the attacker's sbatch was answered (exit $rc)" test "$rc" -ne 124
e2e_check "the attacker's job was refused with the budget named: $out" \
    grep -q 'did not return within the time budget of 100ms' <<<"$out"
e2e_check "slurmctld logged why" grep -qE 'policy error: .*policy\.lua: classify\(\) did not return within the time budget of 100ms' "$ctl_log"
# The attacker's next job, an ordinary one, does not reach a worker: its
# owner cools down (policy.overrun_cooldown, 60s by default).
out=$(cluster_run_as "$user" timeout "$LIMIT" sbatch --parsable --hold -J attacker-again -o /dev/null \
    --wrap true 2>&1)
e2e_check "the attacker's next job is refused while they cool down: $out" \
    grep -qE "a job of uid $(id -u "$user") overran the time budget of 100ms .*policy\.overrun_cooldown" <<<"$out"
victim=$(submit_as_root victim)
e2e_check "another user's sbatch was accepted ($victim)" grep -qE '^[0-9]+$' <<<"$victim"
e2e_check "sinfo answers" timeout "$LIMIT" nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" \
    env SLURM_CONF="$CLUSTER_CONF" sinfo -h
# The worker was replaced: the next ordinary job is classified by the policy.
for i in 1 2 3; do
    v=$(submit_as_root "victim-$i")
    e2e_check "ordinary job $i after the kill was accepted ($v)" grep -qE '^[0-9]+$' <<<"$v"
done
e2e_wait_until 25 grep -qE "policy workers: .* [1-9][0-9]* over the time budget" "$ctl_log"
e2e_check "the kill is counted in slurmctld's log" grep -qE 'policy workers: .* [1-9][0-9]* over the time budget' \
    "$ctl_log"

e2e_wait_until 25 grep -qx 'lanes_policy_overruns_total 1' "$CLUSTER_CONF_DIR/controller.prom"
e2e_check "the kill is in policy.metrics_file" grep -qx 'lanes_policy_overruns_total 1' "$CLUSTER_CONF_DIR/controller.prom"
e2e_check "the cool-down's refusal is in policy.metrics_file" \
    grep -qx 'lanes_policy_refused_total{reason="cooling_down"} 1' "$CLUSTER_CONF_DIR/controller.prom"

# A policy whose top level hangs: the reload is refused in bounded time and
# the running policy stays.
install_policy() { cp -- "$1" "$policy.new" && mv -- "$policy.new" "$policy"; }
e2e_check "slurmctld gave a verdict on the hanging policy" e2e_reload install_policy "$H/xpcall_handler_load.lua"
e2e_check "the reload was refused, saying why" grep -qE 'reload failed.*(did not load the policy within|budget exceeded)' "$ctl_log"
v=$(submit_as_root after-refused-reload)
e2e_check "jobs are still classified after the refused reload ($v)" grep -qE '^[0-9]+$' <<<"$v"

# A fixed policy is picked up.
fixed=$(mktemp)
printf 'function classify(job)\n  if job.comment ~= "" then return "training" end\n  return nil\nend\n' >"$fixed"
e2e_check "slurmctld gave a verdict on the fixed policy" e2e_reload install_policy "$fixed"
rm -f "$fixed"
e2e_check "the fixed policy was loaded" grep -q 'lanes: reloaded' "$ctl_log"
out=$(cluster_run_as "$user" timeout "$LIMIT" sbatch --parsable --hold -J fixed --comment=go -o /dev/null \
    --wrap true 2>&1)
e2e_check "the same submission is accepted under the fixed policy ($out)" grep -qE '^[0-9]+' <<<"$out"
cluster_run_ctl scancel --quiet --user root 2>/dev/null
cluster_run_ctl scancel --quiet --user "$user" 2>/dev/null
e2e_finish
