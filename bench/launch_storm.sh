#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/launch_storm.sh: the launch storm of issue 24 (item 3). On the real
# test cluster (tests/cluster/cluster.sh through tests/e2e/e2e.sh: munged,
# slurmctld and N slurmd, job_submit/lanes and spank_lanes from this build),
# how long Lanes' setup of a job takes on its node, for one job alone and for
# many jobs started at once.
#
#   bench/launch_storm.sh [--nodes N] [--jobs J] [--single S]
#                         [--message-timeout S] [--json FILE]
#
#   --nodes N    slurmd nodes n1..nN in partition "training" (default 10)
#   --jobs J     jobs of the storm (default 200); every node gets ceil(J/N)
#                CPUs, so all of them run at once, about J/N per node
#   --single S   jobs of the baseline, one after another, each alone on the
#                cluster, round robin over the nodes (default 10)
#   --message-timeout S
#                slurm.conf's MessageTimeout (default 60; the test cluster's
#                own is 10). slurmd answers a batch launch once the job's
#                prolog is done; with 10 slurmd and hundreds of slurmstepd
#                on a 2-CPU machine a prolog can take longer than 10 s of
#                which Lanes' part is under 1 s, and slurmctld then gives up
#                on the launch and requeues the job (16-20 of 200 at 10 s
#                here), which measures the machine, not the setup. The run
#                prints how many jobs were requeued anyway.
#   --json FILE  the figures as JSON too
#
# Every job is a one-CPU batch job of class "training" (rate/ceil and DSCP:
# spank_lanes adds an HTB class, an nft element and its state file in its
# prolog). The storm's jobs are submitted held, then released with one
# `scontrol release`: slurmctld starts them together, and their prologs run
# side by side on every node. Setup time: what spank_lanes' prolog logs on
# its node, "lanes: JobId=N class C shaped on K NIC(s) in T ms (U ms CPU; W ms
# waiting for the node lock, H ms holding it with C ms CPU)" (from reading
# lanes.toml to the last tc/nft object; U: the CPU it used, W: the wait for the
# node's state lock, so that waiting for the lock, waiting for a CPU and work
# are told apart). Printed: median and p99 per node and overall, for the
# baseline and the storm, the storm's lock wait per node, their
# ratio (the issue's goal is a storm no more than 2x a single job), the CPU
# figures overall, the storm's span (release to the last job shaped), and
# counts: jobs that ran, jobs shaped, and what Lanes left on the nodes once
# every job ended (classes, nft elements, state files, cgroups: 0 when the
# epilogs cleaned up). The step's share, from the two lines spank_lanes logs
# at SlurmdDebug=verbose (which the cluster runs with here) in the batch step's
# slurmstepd: "lanes: JobId=N step batch set up in T ms (U ms CPU)" (lanes.toml
# read, the job's cgroup keyed) and "... step batch task 0 placed in T ms"
# (the task put where its traffic is classified, its environment set; logged
# when the task ends, and so read once the jobs are done): their
# sum per job, median and p99, single and storm, and their ratio.
#
# A benchmark: it asserts nothing about time. Exit 0 when it measured (the
# counts are printed, whatever they are), 1 on an error (the cluster did not
# start, a job was refused), 77 when not root. Environment: LANES_BUILDDIR
# (default ./build). tests/bench/launch_storm_smoke_test.sh runs it small.
set -uo pipefail
nodes=10 jobs=200 single=10 json="" message_timeout=60
usage() { sed -n '3,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while (($#)); do
    case $1 in
        --nodes) nodes=${2-}; shift ;;
        --jobs) jobs=${2-}; shift ;;
        --single) single=${2-}; shift ;;
        --message-timeout) message_timeout=${2-}; shift ;;
        --json) json=${2-}; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "launch_storm: unknown option '$1' (see --help)" >&2; exit 1 ;;
    esac
    shift
done
say() { printf 'launch_storm: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
if ! [[ $nodes =~ ^[1-9][0-9]*$ ]] || ((nodes > 100)); then die "--nodes must be a number from 1 to 100"; fi
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive number"
[[ $single =~ ^[1-9][0-9]*$ ]] || die "--single must be a positive number"
[[ $message_timeout =~ ^[1-9][0-9]*$ ]] && ((message_timeout <= 3600)) ||
    die "--message-timeout must be a number of seconds from 1 to 3600"
command -v python3 >/dev/null || { echo "SKIP: launch_storm needs python3"; exit 77; }

# shellcheck source=bench/e2e_bench.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_bench.sh"

cpus=$(((jobs + nodes - 1) / nodes))
spec="" names=()
for ((k = 1; k <= nodes; k++)); do spec+="n$k:training:train "; names+=("n$k"); done
export LANES_CLUSTER_NODES=$spec LANES_CLUSTER_CPUS=$cpus
export LANES_CLUSTER_TIMEOUT=${LANES_CLUSTER_TIMEOUT:-180}
# spank_lanes logs the step's setup at verbose.
export LANES_CLUSTER_DEBUG=${LANES_CLUSTER_DEBUG:-verbose}
# Hundreds of submissions on a loaded machine: a policy budget load cannot
# miss (this is about the nodes, not the budget).
export E2E_POLICY_TIME_BUDGET=${E2E_POLICY_TIME_BUDGET:-500ms}
# e2e's lanes.toml shapes eth0 on train1, train2 and infer1: here, every node.
e2e_pre_start() { sed -i 's/^nodes = "train\[1-2\],infer1"$/nodes = "*"/' "$1/lanes.toml"; }
t0=$SECONDS
out=$(mktemp -d "${TMPDIR:-/tmp}/lanes-launch-storm.XXXXXX") || exit 1
# Every job of the storm is scheduled in one pass (sched/builtin stops at the
# queue depth, and the next pass can be a minute away).
E2E_MODE=offpeak e2e_start_cluster "SchedulerParameters=batch_sched_delay=0,default_queue_depth=$((jobs + 100))" \
    "MessageTimeout=$message_timeout" \
    >"$out/cluster-start.log" 2>&1 || die "the cluster did not start: $(tail -5 "$out/cluster-start.log")"
# On a signal too: exit through the EXIT trap, which removes the cluster and
# the nodes' state dirs (the cluster's own signal trap leaves the latter).
trap 'e2e_on_exit >/dev/null 2>&1; rm -rf "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
say "cluster: slurmctld + $nodes slurmd ($cpus CPUs each, MessageTimeout=$message_timeout) up in $((SECONDS - t0)) s"
work=$CLUSTER_WORK_DIR

# submit NAME [SBATCH ARGS...]: a held or running one-CPU job whose output
# says it ran; prints its id.
submit() {
    local name=$1
    shift
    cluster_sbatch -p training -n1 -J "$name" -o "$work/%x-%j.out" "$@" --wrap 'echo ran; sleep 2'
}
# wait_for SECONDS CMD...: run CMD every second until it succeeds or SECONDS
# have passed (a bound for a hang; once a second, so that watching the storm
# does not load the machine it measures).
wait_for() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < end)) || return 1
        sleep 1
    done
}
# node_clean NODE: true when Lanes has nothing left on NODE.
node_clean() { [[ -z $(e2e_node_state "$1") ]]; }
all_clean() { local n; for n in "${names[@]}"; do node_clean "$n" || return 1; done; }
# nodes_sed SED-EXPR...: sed -nE with these expressions over every node's log,
# "@N@" in them replaced by the node's name.
nodes_sed() {
    local n
    for n in "${names[@]}"; do
        sed -nE "${@//@N@/$n}" "$(cluster_log "$n")" 2>/dev/null
    done
}
# shaped_lines: "NODE JOBID MS CPU_MS WAIT_MS HELD_MS HELD_CPU_MS [HELD_RUNQ_MS]"
# for every job shaped so far, from the logs (the node lock's figures "-" in
# the line of a spank_lanes that did not log them; HELD_RUNQ_MS, the hold's
# time preempted, absent where the kernel keeps no run-queue delay).
shaped_lines() {
    nodes_sed -e "s/.*lanes: JobId=([0-9]+) class [^ ]+ shaped on [0-9]+ NIC\(s\) in ([0-9.]+) ms \(([0-9.]+) ms CPU; ([0-9.]+) ms waiting for the node lock, ([0-9.]+) ms holding it with ([0-9.]+) ms CPU( and ([0-9.]+) ms waiting for a CPU)?\).*/@N@ \1 \2 \3 \4 \5 \6 \8/p" \
        -e "s/.*lanes: JobId=([0-9]+) class [^ ]+ shaped on [0-9]+ NIC\(s\) in ([0-9.]+) ms \(([0-9.]+) ms CPU\).*/@N@ \1 \2 \3 - - - -/p"
}
# step_lines: "NODE JOBID PART MS CPU_MS" for the batch step of every job,
# PART "step" (its start) or "task" (task 0 placed), from the nodes' logs.
# CPU_MS "-" where another process's line cut into this one (seen in a 10-node
# storm when the task logged from the forked child: "placed in 5.19 ms (4.93
# m[...] lanes: JobId=121 ..."; slurmstepd logs the task's line now).
step_lines() {
    nodes_sed -e "s/.*lanes: JobId=([0-9]+) step batch set up in ([0-9.]+) ms \(([0-9.]+) ms CPU\).*/@N@ \1 step \2 \3/p" \
        -e "s/.*lanes: JobId=([0-9]+) step batch set up in ([0-9.]+) ms.*/@N@ \1 step \2 -/p" \
        -e "s/.*lanes: JobId=([0-9]+) step batch task 0 placed in ([0-9.]+) ms \(([0-9.]+) ms CPU\).*/@N@ \1 task \2 \3/p" \
        -e "s/.*lanes: JobId=([0-9]+) step batch task 0 placed in ([0-9.]+) ms.*/@N@ \1 task \2 -/p"
}
# count_shaped IDS...: how many of these jobs a node logged as shaped.
count_shaped() {
    local -A want=()
    local id j c=0
    for id in "$@"; do want[$id]=1; done
    # Distinct jobs: a job Slurm requeued is shaped once per run.
    while read -r _ j _; do [[ ${want[$j]:-} == 1 ]] && want[$j]=2 && c=$((c + 1)); done < <(shaped_lines)
    echo "$c"
}
# requeued IDS...: how many of these jobs slurmctld requeued (a batch launch
# it gave up on under load: the job runs again, and is set up again).
requeued() {
    local -A want=()
    local id
    for id in "$@"; do want[$id]=1; done
    sed -nE 's/.*_job_complete: requeue JobId=([0-9]+) .*/\1/p' "$(cluster_log ctl)" 2>/dev/null | sort -u |
        while read -r id; do [[ -n ${want[$id]:-} ]] && echo "$id"; done | wc -l
}
# ran PREFIX: how many of the jobs named PREFIX wrote their output.
ran() { grep -lx ran "$work/$1"-*.out 2>/dev/null | wc -l; }

# (a) The baseline: one job at a time, each alone, nodes taken in turn; the
# next starts once this one ended and its node is clean again.
single_ids=()
for ((k = 0; k < single; k++)); do
    node=${names[k % nodes]}
    id=$(submit single -w "$node") || die "sbatch refused a baseline job"
    single_ids+=("$id")
    cluster_wait_job "$id" COMPLETED 120 >/dev/null 2>&1 || say "baseline job $id did not complete"
    wait_for 60 node_clean "$node" || say "node $node not clean 60 s after job $id"
done
say "baseline: ${#single_ids[@]} jobs one after another"

# (b) The storm: submitted held, released at once.
storm_ids=()
for ((k = 0; k < jobs; k++)); do
    id=$(submit storm --hold) || die "sbatch refused a storm job"
    storm_ids+=("$id")
done
say "storm: $jobs jobs submitted held; releasing them at once"
released=$EPOCHREALTIME
cluster_run_ctl scontrol release "$(IFS=,; echo "${storm_ids[*]}")" >"$out/release.log" 2>&1 ||
    die "scontrol release: $(head -3 "$out/release.log")"
storm_id_list=$(IFS=,; echo "${storm_ids[*]}")
# Settled: every job shaped, or every job gone (a job that ended unshaped is
# counted below, not waited for).
settled() { (($(count_shaped "${storm_ids[@]}") == jobs)) || e2e_queue_empty --jobs "$storm_id_list"; }
wait_for 600 settled || say "storm jobs neither shaped nor ended within 600 s"
span=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$released" "$EPOCHREALTIME")
wait_for 600 e2e_queue_empty --jobs "$storm_id_list" || say "storm jobs still queued after 600 s"
wait_for 120 all_clean || say "nodes not clean 120 s after the storm"

# Counts and leftovers, then the figures.
declare -A left=()
for n in "${names[@]}"; do left[$n]=$(e2e_node_state "$n" | grep -c .); done
shaped_lines >"$out/shaped"
step_lines >"$out/steps"
# A job that ran without both step lines is left out of the step's figures;
# say which line is missing and what its node logged of it, to tell a line
# Slurm lost from a step spank_lanes did not time.
for id in "${single_ids[@]}" "${storm_ids[@]}"; do
    for part in step task; do
        grep -q "^[^ ]* $id $part " "$out/steps" && continue
        grep -qsx ran "$work"/*-"$id".out || continue
        say "JobId=$id ran, but no node logged its batch $part line; its lines:"
        nodes_sed -e "/JobId=$id[^0-9]|job_id $id[^0-9]|StepId=$id[.]/s/^/  @N@: /p" | tail -15 >&2
    done
done
{
    printf 'single %s\n' "${single_ids[*]}"
    printf 'storm %s\n' "${storm_ids[*]}"
    printf 'ran %s %s\n' "$(ran single)" "$(ran storm)"
    printf 'span %s\n' "$span"
    printf 'requeued %s %s\n' "$(requeued "${single_ids[@]}")" "$(requeued "${storm_ids[@]}")"
    for n in "${names[@]}"; do printf 'left %s %s\n' "$n" "${left[$n]}"; done
    printf 'load %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf 'cpus %s %s\n' "$(nproc)" "$cpus"
} >"$out/facts"
python3 - "$out/shaped" "$out/facts" "$json" "$out/steps" <<'PY'
import json, math, statistics, sys

shaped_file, facts_file, json_file, steps_file = sys.argv[1:5]
facts = {}
left = {}
for line in open(facts_file):
    key, _, rest = line.rstrip("\n").partition(" ")
    if key == "left":
        node, count = rest.split()
        left[node] = int(count)
    else:
        facts[key] = rest.split()
single_ids, storm_ids = set(facts["single"]), set(facts["storm"])
nodes = list(left)
ms = {"single": {n: [] for n in nodes}, "storm": {n: [] for n in nodes}}
cpu = {"single": [], "storm": []}
# The node lock's share of each setup: waiting for it, holding it, CPU while held.
lock = {p: {"wait": {n: [] for n in nodes}, "held": [], "held_cpu": [], "held_runq": [], "walls": []}
        for p in ("single", "storm")}
seen = {"single": set(), "storm": set()}
for line in open(shaped_file):
    node, job, took, cpu_took, wait, held, held_cpu, *held_runq = line.split()
    phase = "single" if job in single_ids else "storm" if job in storm_ids else None
    if phase and job not in seen[phase]:
        seen[phase].add(job)
        ms[phase][node].append(float(took))
        cpu[phase].append(float(cpu_took))
        if wait != "-":
            lock[phase]["wait"][node].append(float(wait))
            lock[phase]["held"].append(float(held))
            lock[phase]["held_cpu"].append(float(held_cpu))
            if held_runq and held_runq[0] != "-":
                lock[phase]["held_runq"].append(float(held_runq[0]))
            lock[phase]["walls"].append(float(took))


# The step's share: the batch step's start plus its task, per job (a job with
# only one of the two lines is left out: its other line was not logged).
parts = {}
for line in open(steps_file):
    node, job, part, took, cpu_took = line.split()
    parts.setdefault(job, {})[part] = (float(took), None if cpu_took == "-" else float(cpu_took))
step = {"single": [], "storm": []}
step_cpu = {"single": [], "storm": []}
for job, p in parts.items():
    phase = "single" if job in single_ids else "storm" if job in storm_ids else None
    if phase and "step" in p and "task" in p:
        step[phase].append(p["step"][0] + p["task"][0])
        if p["step"][1] is not None and p["task"][1] is not None:
            step_cpu[phase].append(p["step"][1] + p["task"][1])


def p99(xs):  # nearest rank
    s = sorted(xs)
    return s[max(0, math.ceil(0.99 * len(s)) - 1)]


def figures(xs):
    if not xs:
        return {"jobs": 0, "median_ms": None, "p99_ms": None}
    return {"jobs": len(xs), "median_ms": round(statistics.median(xs), 2), "p99_ms": round(p99(xs), 2)}


def fmt(v):
    return "-" if v is None else f"{v:.1f}"


def ratio(a, b):
    return None if a is None or not b else round(a / b, 2)


result = {"nodes": {}, "load_avg": [float(x) for x in facts["load"]], "machine_cpus": int(facts["cpus"][0]),
          "node_cpus": int(facts["cpus"][1]), "storm_span_s": float(facts["span"][0]),
          "requeued": {"single": int(facts["requeued"][0]), "storm": int(facts["requeued"][1])}}
for phase, ids in (("single", single_ids), ("storm", storm_ids)):
    result[phase] = figures([x for n in nodes for x in ms[phase][n]])
    c = figures(cpu[phase])
    result[phase].update({"cpu_median_ms": c["median_ms"], "cpu_p99_ms": c["p99_ms"], "submitted": len(ids),
                          "ran": int(facts["ran"][0 if phase == "single" else 1]), "shaped": len(seen[phase])})
result["ratio_median"] = ratio(result["storm"]["median_ms"], result["single"]["median_ms"])
result["ratio_p99"] = ratio(result["storm"]["p99_ms"], result["single"]["p99_ms"])
result["ratio_cpu_median"] = ratio(result["storm"]["cpu_median_ms"], result["single"]["cpu_median_ms"])
result["left_on_nodes"] = sum(left.values())
for phase in ("single", "storm"):
    result[phase]["step_setup"] = figures(step[phase])
    result[phase]["step_setup_cpu"] = figures(step_cpu[phase])
result["ratio_step_median"] = ratio(result["storm"]["step_setup"]["median_ms"], result["single"]["step_setup"]["median_ms"])
result["ratio_step_p99"] = ratio(result["storm"]["step_setup"]["p99_ms"], result["single"]["step_setup"]["p99_ms"])
for phase in ("single", "storm"):
    waits = [x for n in nodes for x in lock[phase]["wait"][n]]
    result[phase]["lock_wait"] = figures(waits)
    result[phase]["lock_held"] = figures(lock[phase]["held"])
    result[phase]["lock_held_cpu"] = figures(lock[phase]["held_cpu"])
    # Of the hold, the time the holder was runnable but not running: preempted.
    result[phase]["lock_held_runqueue"] = figures(lock[phase]["held_runq"])
    # The share of the setups' summed wall time spent waiting for the node lock.
    total = sum(lock[phase]["walls"])
    result[phase]["lock_wait_share"] = round(sum(waits) / total, 3) if waits and total else None

print("launch storm: Lanes' setup of a job on its node (spank_lanes prolog, ms)")
print(f"{'node':<8}{'single n':>9}{'median':>9}{'p99':>9}{'storm n':>9}{'median':>9}{'p99':>9}"
      f"{'lock wait med':>14}{'p99':>9}{'left':>6}")
for n in nodes:
    a, b = figures(ms["single"][n]), figures(ms["storm"][n])
    w = figures(lock["storm"]["wait"][n])
    result["nodes"][n] = {"single": a, "storm": b, "storm_lock_wait": w, "left": left[n]}
    print(f"{n:<8}{a['jobs']:>9}{fmt(a['median_ms']):>9}{fmt(a['p99_ms']):>9}"
          f"{b['jobs']:>9}{fmt(b['median_ms']):>9}{fmt(b['p99_ms']):>9}"
          f"{fmt(w['median_ms']):>14}{fmt(w['p99_ms']):>9}{left[n]:>6}")
s, t = result["single"], result["storm"]
print(f"{'all':<8}{s['jobs']:>9}{fmt(s['median_ms']):>9}{fmt(s['p99_ms']):>9}"
      f"{t['jobs']:>9}{fmt(t['median_ms']):>9}{fmt(t['p99_ms']):>9}"
      f"{fmt(t['lock_wait']['median_ms']):>14}{fmt(t['lock_wait']['p99_ms']):>9}{result['left_on_nodes']:>6}")
storm_medians = [result["nodes"][n]["storm"]["median_ms"] for n in nodes if result["nodes"][n]["storm"]["jobs"]]
if storm_medians:
    print(f"storm per node: median from {min(storm_medians):.1f} to {max(storm_medians):.1f} ms")
print(f"ratio storm/single: median {fmt(result['ratio_median'])}x, p99 {fmt(result['ratio_p99'])}x (goal <= 2x)")
print(f"CPU of the setup (ms): single median {fmt(s['cpu_median_ms'])} p99 {fmt(s['cpu_p99_ms'])}, "
      f"storm median {fmt(t['cpu_median_ms'])} p99 {fmt(t['cpu_p99_ms'])} "
      f"(ratio of the medians {fmt(result['ratio_cpu_median'])}x)")
for phase in ("single", "storm"):
    p = result[phase]
    if p["lock_wait"]["jobs"]:
        share = p["lock_wait_share"]
        print(f"node lock, {phase} (ms): waiting median {fmt(p['lock_wait']['median_ms'])} p99 "
              f"{fmt(p['lock_wait']['p99_ms'])}, holding median {fmt(p['lock_held']['median_ms'])} p99 "
              f"{fmt(p['lock_held']['p99_ms'])} (CPU while held median {fmt(p['lock_held_cpu']['median_ms'])}"
              + (f", waiting for a CPU while held median {fmt(p['lock_held_runqueue']['median_ms'])} p99 "
                 f"{fmt(p['lock_held_runqueue']['p99_ms'])}" if p["lock_held_runqueue"]["jobs"] else "") + "); "
              f"waiting = {'-' if share is None else f'{100 * share:.0f} %'} of the setups' wall time")
ss, ts = s["step_setup"], t["step_setup"]
print(f"step setup (batch step start + task 0, ms): single {ss['jobs']} jobs median {fmt(ss['median_ms'])} "
      f"p99 {fmt(ss['p99_ms'])}, storm {ts['jobs']} jobs median {fmt(ts['median_ms'])} p99 {fmt(ts['p99_ms'])}; "
      f"ratio median {fmt(result['ratio_step_median'])}x, p99 {fmt(result['ratio_step_p99'])}x; CPU median "
      f"{fmt(s['step_setup_cpu']['median_ms'])} / {fmt(t['step_setup_cpu']['median_ms'])} ms")
print(f"storm span: {result['storm_span_s']:.1f} s from release to the last job shaped "
      "(or, if some never were, to the last job's end; polled once a second)")
print(f"single: {s['submitted']} submitted, {s['ran']} ran, {s['shaped']} shaped")
print(f"storm: {t['submitted']} submitted, {t['ran']} ran, {t['shaped']} shaped")
rq = result["requeued"]
print(f"requeued by slurmctld: single {rq['single']}, storm {rq['storm']}"
      + (" (launches it gave up on under load: those jobs ran and were set up again; their first setup is counted, "
         "the span includes their second start)" if rq["single"] or rq["storm"] else ""))
print(f"left on nodes: {result['left_on_nodes']}")
print(f"machine: {result['machine_cpus']} CPUs, load average {' '.join(facts['load'])} at the end")
if json_file:
    with open(json_file, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
PY
