#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Churn (issue #19): 200 jobs through Slurm with the real plugins and
# lanes-agent running on every node (in the node's namespace, its own textfile
# dir), with faults injected at random between them: `nft flush ruleset`,
# `tc qdisc del dev eth0 root`, eth0 down for about a second and up again,
# the agent killed with -9 and restarted, a slurmd restart, a failing epilog
# (lanes.toml broken at a job's end, then `lanesctl gc`). At every checkpoint
# no node drifts: `lanesctl reconcile --dry-run` finds nothing to repair and
# every job with state has its class at its ceil and its nft element. At the
# end nothing is left: no job class, no parked class, no element, no state,
# gso_max_size back. The seed is printed (CHURN_SEED=N replays the choice of
# faults); the repairs the agents counted, by object and cause, are printed.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
AGENT=${E2E_AGENT:-$LANES_BUILDDIR/agent/lanes-agent}
[[ -x $AGENT ]] || { echo "FAIL: $AGENT is not built"; exit 1; }
export LANES_CLUSTER_CPUS=8
# Hundreds of jobs from a machine other tests load: a policy time budget load
# cannot miss (this test is about node state, not the budget).
export E2E_POLICY_TIME_BUDGET=500ms
E2E_MODE=offpeak e2e_start_cluster
work=$CLUSTER_WORK_DIR
state_root=$E2E_STATE_ROOT
cgroup_root=$E2E_CGROUP_ROOT
lanesctl=$E2E_LANESCTL
conf=$CLUSTER_CONF_DIR/lanes.toml
nodes=(train1 train2 infer1)
seed=${CHURN_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$seed
e2e_pass "(figure) seed $seed (CHURN_SEED=$seed replays the faults)"

all_clean() { local n; for n in "${nodes[@]}"; do [[ -z $(e2e_node_state "$n") ]] || return 1; done; }
declare -A gso0
for n in "${nodes[@]}"; do gso0[$n]=$(e2e_gso_max_size "$n"); done

# One agent per node, with a copy of lanes.toml naming its own textfile dir
# (the failing epilog breaks lanes.toml; the agents keep their copy).
declare -A agent_pid
start_agent() {
    local n=$1
    mkdir -p "$work/agent-$n/textfile"
    { cat "$work/lanes.toml.good"; printf '\n[agent]\ntextfile_dir = "%s"\n' "$work/agent-$n/textfile"; } \
        >"$CLUSTER_CONF_DIR/agent-$n.toml"
    # nsenter execs the agent: $! is the agent's PID.
    nsenter --net="/run/netns/$(cluster_netns "$n")" -- "$AGENT" --config "$CLUSTER_CONF_DIR/agent-$n.toml" \
        --node "$n" >>"$work/agent-$n.log" 2>&1 </dev/null &
    agent_pid[$n]=$!
}
metrics_of() { cat "$work/agent-$1/textfile/lanes_agent.prom" 2>/dev/null; }
# A killed agent's counts are kept here: its successor starts from zero.
kill_agent() {  # NODE SIGNAL
    metrics_of "$1" | grep '^lanes_agent_repairs_total' >>"$work/repairs-carried" || true
    kill "-$2" "${agent_pid[$1]}" 2>/dev/null
    wait "${agent_pid[$1]}" 2>/dev/null
}
stop_agents() { local n; for n in "${!agent_pid[@]}"; do kill -TERM "${agent_pid[$n]}" 2>/dev/null; done; }
trap 'stop_agents; e2e_on_exit' EXIT
cp "$conf" "$work/lanes.toml.good"
for n in "${nodes[@]}"; do start_agent "$n"; done
for n in "${nodes[@]}"; do
    e2e_check "lanes-agent runs on $n" e2e_wait_until 30 test -s "$work/agent-$n/textfile/lanes_agent.prom"
done

# Drift: reconcile finds nothing to repair, and the direct look agrees: every
# job with state on the node has its element in its DSCP set and, training,
# a class at 60 Mbit (lanes.toml's ceil).
reconcile_clean() { cluster_run_node "$1" "$lanesctl" reconcile --dry-run --config "$conf" --node "$1" >/dev/null 2>&1; }
jobs_in_place() {
    local n=$1 f id want ceils elements
    ceils=$(cluster_run_node "$n" tc class show dev eth0 | grep -cE 'class htb 1a4e:[0-9a-f]+ parent 1a4e:1 .*ceil 60Mbit')
    elements=0
    for f in "$state_root/$n"/job_*; do
        [[ -e $f ]] || continue
        id=${f##*job_}
        [[ -d $cgroup_root/$n/job_$id ]] || continue  # ending: its epilog runs
        if [[ $n == infer1 ]]; then want=dscp_34; else want=dscp_8; fi
        e2e_nft_holds "$n" set "$want" "$cgroup_root/$n/job_$id" || return 1
        ((++elements))
    done
    # Training nodes: at least one class at the job ceil per shaped job.
    [[ $n == infer1 ]] || ((ceils >= elements))
}
no_drift() { local n; for n in "${nodes[@]}"; do reconcile_clean "$n" && jobs_in_place "$n" || return 1; done; }
checkpoint() {
    if e2e_wait_until 60 no_drift; then
        e2e_pass "checkpoint $1: no drift on any node"
    else
        local n
        for n in "${nodes[@]}"; do
            printf -- '--- %s: reconcile --dry-run\n' "$n"
            cluster_run_node "$n" "$lanesctl" reconcile --dry-run --config "$conf" --node "$n" 2>&1 | tail -10
        done
        e2e_fail "checkpoint $1: drift left after 60 s"
    fi
}

# One long job per node all along: there is always a running job to check.
anchors=()
for n in "${nodes[@]}"; do
    if [[ $n == infer1 ]]; then name=infer-anchor; else name=train-anchor; fi
    anchors+=("$(cluster_sbatch -J "$name" -w "$n" -o /dev/null --wrap 'sleep 900')")
done
for id in "${anchors[@]}"; do cluster_wait_job "$id" RUNNING 60 >/dev/null; done
checkpoint "anchors"

declare -A faults_done
fault() {  # KIND (RANDOM read here, not in a subshell: the seed replays)
    local n=${nodes[RANDOM % ${#nodes[@]}]}
    case $1 in
        flush) cluster_run_node "$n" nft flush ruleset ;;
        qdisc) cluster_run_node "$n" tc qdisc del dev eth0 root ;;
        link) # Between rounds (see below); slurmd talks over eth0: down for
              # about a second only.
            cluster_run_node "$n" ip link set eth0 down
            sleep 1
            cluster_run_node "$n" ip link set eth0 up ;;
        agent) kill_agent "$n" KILL; start_agent "$n" ;;
        slurmd) n=train$((RANDOM % 2 + 1)); cluster_restart_slurmd "$n" >/dev/null 2>&1 ;;
        epilog) failing_epilog; n=train1 ;;
    esac
    faults_done[$1]=$((${faults_done[$1]:-0} + 1))
    printf 'fault: %s on %s\n' "$1" "$n"
}
# A job whose epilog cannot tear it down (lanes.toml broken, no last good copy
# on its node); `lanesctl gc` removes it once slurmctld says it ended. Run with
# no other job starting (the broken lanes.toml would fail their prologs too).
failing_epilog() {
    local id out
    id=$(cluster_sbatch -J train-epilog -w train1 -p training -o /dev/null --wrap 'sleep 300')
    cluster_wait_job "$id" RUNNING 60 >/dev/null
    e2e_wait_until 60 test -f "$state_root/train1/job_$id" || e2e_fail "job $id never shaped on train1"
    e2e_break_config
    cluster_run_ctl scancel "$id"
    e2e_wait_until 60 grep -q "JobId=$id: no usable lanes.toml" "$(cluster_log train1)" ||
        e2e_fail "job $id's epilog did not give up"
    # Broken until Slurm is done with the job on the node (no hook of it
    # left to run with a good lanes.toml): then only gc can reclaim it.
    e2e_wait_until 60 e2e_queue_empty -j "$id"
    e2e_restore_config
    [[ -f $state_root/train1/job_$id ]] || e2e_fail "job $id's state went before gc ran"
    # gc keeps a job whose cgroup still has processes (status_gc_test checks
    # that). Slurm has ended the job, but once in a CI run its `sleep` outlived
    # the queue entry (and the test): wait for the cgroup to empty, and end a
    # task Slurm left behind, printed as a figure, before asking gc.
    local procs=$E2E_CGROUP_ROOT/train1/job_$id/cgroup.procs
    if ! e2e_wait_until 30 eval "[[ ! -s $procs ]]"; then
        echo "figure: job $id's cgroup still held pid(s) $(tr '\n' ' ' <"$procs" 2>/dev/null)30 s after Slurm ended it; ended by the test"
        xargs -r kill -KILL <"$procs" 2>/dev/null
        e2e_wait_until 10 eval "[[ ! -s $procs ]]"
    fi
    out=$(cluster_run_node train1 "$lanesctl" gc --config "$conf" --node train1 2>&1)
    grep -qE "^removed job $id " <<<"$out" || e2e_fail "gc did not remove job $id after its failed epilog ($out)"
    [[ -f $state_root/train1/job_$id ]] && e2e_fail "job $id's state left after gc"
}

kinds=(flush qdisc link agent slurmd epilog)
only_anchors() { [[ $(cluster_run_ctl squeue -h -o %i | sort | tr '\n' ' ') == "$(printf '%s\n' "${anchors[@]}" | sort | tr '\n' ' ')" ]]; }
submitted=0 round=0
while ((submitted < 200)); do
    ((++round))
    pids=()
    for i in $(seq 10); do
        for kind in train infer; do
            secs=$((RANDOM % 3 + 1))
            cluster_run_ctl sbatch --parsable -J "$kind-$round-$i" -o /dev/null --wrap "sleep $secs" >/dev/null &
            pids+=($!)
        done
    done
    wait "${pids[@]}"
    submitted=$((submitted + 20))
    # One or two faults while the round's jobs start, run and end.
    nfaults=$((RANDOM % 2 + 1))
    for ((f = 0; f < nfaults; f++)); do
        kind=${kinds[RANDOM % ${#kinds[@]}]}
        # After the round, with no prolog running: slurmd talks over eth0,
        # so a launch while it is down fails for Slurm's own reasons (the
        # prolog itself shapes a down NIC, tests/net/shaper_converge_test.sh);
        # the epilog fault breaks lanes.toml for every prolog.
        [[ $kind == epilog || $kind == link ]] && continue
        sleep "0.$((RANDOM % 10))"
        fault "$kind"
    done
    checkpoint "round $round (jobs running)"
    e2e_wait_until 300 only_anchors || e2e_fail "round $round's jobs did not finish"
    ((RANDOM % 3 == 0)) && fault link
    ((RANDOM % 4 == 0)) && fault epilog
    checkpoint "round $round ($submitted jobs)"
done
# Every kind once at least, whatever the seed.
for kind in "${kinds[@]}"; do [[ -n ${faults_done[$kind]:-} ]] || fault "$kind"; done
checkpoint "after every kind of fault"
summary=""
for kind in "${kinds[@]}"; do summary+="$kind=${faults_done[$kind]} "; done
e2e_pass "(figure) faults injected: $summary"
checkpoint "end (anchors running)"

cluster_run_ctl scancel "${anchors[@]}"
e2e_check "all jobs finished" e2e_wait_until 120 e2e_queue_empty
e2e_check "nothing left on any node after 200 jobs and the faults" e2e_wait_until 120 all_clean
all_clean || for n in "${nodes[@]}"; do printf -- '--- %s:\n%s\n' "$n" "$(e2e_node_state "$n")"; done
for n in "${nodes[@]}"; do
    e2e_check "gso_max_size back on $n ($(e2e_gso_max_size "$n"), was ${gso0[$n]})" test "$(e2e_gso_max_size "$n")" = "${gso0[$n]}"
done

# The repairs the agents counted, by object and cause (killed agents' included).
for n in "${nodes[@]}"; do metrics_of "$n" | grep '^lanes_agent_repairs_total' >>"$work/repairs-carried" || true; done
e2e_pass "(figure) repairs the agents counted, by object and cause:"
awk '{ split($1, a, "[{}]"); sum[a[2]] += $2 } END { for (k in sum) printf "    %s %d\n", k, sum[k] }' \
    "$work/repairs-carried" | sort
for n in "${nodes[@]}"; do
    e2e_pass "(figure) $n: $(grep -c 'repaired ' "$work/agent-$n.log") repair line(s) in the agent's log"
    metrics_of "$n" | grep -v '^#'
    grep 'repaired ' "$work/agent-$n.log" | head -3
done
# The agents stop cleanly and leave nothing behind either.
for n in "${nodes[@]}"; do
    kill -TERM "${agent_pid[$n]}"
    wait "${agent_pid[$n]}"
    e2e_check "the agent on $n exits 0 on SIGTERM" test $? -eq 0
done
e2e_check "still nothing left once the agents stopped" all_clean
e2e_finish
