#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Dynamic shifting on the real cluster with a real Prometheus (Debian's, in the
# controller's namespace, scraping an exporter whose value the test sets):
#   - a signal whose server hangs never blocks a submission or a task launch;
#     slurmctld logs the timeout;
#   - demand low: a training job is not deferred; demand high: the "busy" window
#     (follows the signal) holds, a training job is deferred by its retry, an
#     inference job is not;
#   - the node agent on train1 tightens the running training job's HTB ceil
#     while busy, restores it when demand falls, and leaves nothing behind on
#     SIGTERM;
#   - the ceil controller ([classes.training.control]) on a two-node training
#     job, an agent on each node, following a plant (an exporter whose p99
#     this test sets from the job's ceils in the kernel: over the SLO while
#     either node's ceil is above 45 Mbit/s, so the class's 60 Mbit/s breaks
#     it): the ceil settles between the floor and 45 Mbit/s, the same on both
#     nodes; the changes in the steady part are few (a count); each change is
#     logged with its cause and counted; SIGTERM gives the job its own ceil back.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
command -v prometheus >/dev/null || { echo "FAIL: prometheus not installed (Debian: apt-get install prometheus)"; exit 1; }
LANESCTL=$LANES_BUILDDIR/lanesctl/lanesctl
SIG_T=$(mktemp -d /tmp/le2esig$$.XXXXXX)
echo 0 >"$SIG_T/value"
SIG_PIDS=""
PROM_PORT=19090
FAKE_PORT=19091
PLANT_PORT=19092
echo 0.003 >"$SIG_T/p99"

e2e_pre_start() {  # CONF_DIR: add the signals, start the servers in ctl's namespace
    local conf=$1 ns="nsenter --net=/run/netns/${CLUSTER_PREFIX}ctl"
    sed -i 's/^avoid_windows = \["peak"\]/avoid_windows = ["peak", "busy"]/' "$conf/lanes.toml"
    sed -i 's/^ceil = "60Mbit"/ceil = "60Mbit"\nbusy_window = "busy"\nbusy_ceil = "45Mbit"/' "$conf/lanes.toml"
    cat >>"$conf/lanes.toml" <<TOML

[signals.demand]
url = "http://$CLUSTER_CTL_IP:$PROM_PORT"
query = 'max(lanes_test_demand{job="lanes-e2e"})'
interval = "1s"
timeout = "500ms"
stale_after = "5s"

[signals.hung]
url = "http://127.0.0.1:$FAKE_PORT/slow"
query = "up"
interval = "3s"
timeout = "3s"

[windows.busy]
signal = "demand"
above = 10
until_below = 5
retry = "10min"

[agent]
textfile_dir = "$SIG_T/textfile"
TOML
    $ns ip link set lo up
    $ns python3 "$LANES_SRCDIR/tests/signals/fake_api.py" --port "$FAKE_PORT" --port-file "$SIG_T/port" \
        --value-file "$SIG_T/value" 2>"$SIG_T/fake.log" &
    SIG_PIDS="$SIG_PIDS $!"
    $ns python3 "$LANES_SRCDIR/tests/signals/fake_api.py" --port "$PLANT_PORT" --port-file "$SIG_T/plant-port" \
        --value-file "$SIG_T/p99" 2>"$SIG_T/plant.log" &
    SIG_PIDS="$SIG_PIDS $!"
    cat >"$SIG_T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: lanes-e2e
    static_configs:
      - targets: ['127.0.0.1:$FAKE_PORT']
  - job_name: plant
    static_configs:
      - targets: ['127.0.0.1:$PLANT_PORT']
YML
    $ns prometheus --config.file="$SIG_T/prometheus.yml" --storage.tsdb.path="$SIG_T/data" \
        --web.listen-address="0.0.0.0:$PROM_PORT" --log.level=warn >"$SIG_T/prometheus.log" 2>&1 &
    SIG_PIDS="$SIG_PIDS $!"
}
E2E_MODE=offpeak e2e_start_cluster
sig_cleanup() {
    local rc=$? p
    for p in $SIG_PIDS; do kill "$p" 2>/dev/null; done
    for p in $SIG_PIDS; do wait "$p" 2>/dev/null; done
    rm -rf "$SIG_T"
    return $rc
}
trap 'sig_cleanup; e2e_on_exit' EXIT
ctld_log=$(cluster_log slurmctld)
conf=$(dirname "$CLUSTER_CONF")/lanes.toml

wait_log() {  # PATTERN SECONDS FILE
    local _
    for _ in $(seq $(($2 * 10))); do grep -q -- "$1" "$3" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
ceil_on() {  # NODE JOB: the ceil of the job's class on NODE's eth0 (minor from its state file)
    local minor
    minor=$(sed -n 's/^minor=//p' "$E2E_STATE_ROOT/$1/job_$2" 2>/dev/null) || return 1
    [[ -n $minor ]] || return 1
    cluster_run_node "$1" tc class show dev eth0 classid "1a4e:$(printf %x "$minor")" | grep -o 'ceil [0-9.]*[KMG]*bit' | awk '{print $2}'
}
ceil_on_train1() { ceil_on train1 "$1"; }
wait_ceil() {  # JOB WANT SECONDS
    local _
    for _ in $(seq $(($3 * 10))); do [[ $(ceil_on_train1 "$1") == "$2" ]] && return 0; sleep 0.1; done
    return 1
}
begin_delay() {  # JOB: EligibleTime (the begin time job_submit set) - SubmitTime, seconds
    echo $(( $(date -u -d "$(cluster_job_field "$1" EligibleTime)" +%s) - $(date -u -d "$(cluster_job_field "$1" SubmitTime)" +%s) ))
}

e2e_check "slurmctld logs the hung signal's timeout" \
    wait_log 'lanes: signal hung: http://127.0.0.1:19091/slow: query failed: no answer within the timeout of 3000 ms' 30 "$ctld_log"


# Until slurmctld has a first value of demand the window is busy (when_unknown's
# default protects inference): once it has one, the window ends.
ends_before=0
if grep -q 'lanes: window busy begins: no usable value of demand' "$ctld_log"; then
    e2e_check "slurmctld: window busy while demand is unknown, ends once it is known" \
        wait_log 'lanes: window busy ends: demand=0' 30 "$ctld_log"
fi
ends_before=$(grep -c 'lanes: window busy ends' "$ctld_log")

# Demand low (and the hung server hanging): a training job runs now, on train1.
id_low=$(cluster_sbatch -J train-low -w train1 -p training -o /dev/null --wrap 'sleep 300')
e2e_check "training job $id_low accepted while a signal server hangs" test -n "$id_low"
cluster_wait_job "$id_low" RUNNING 60 >/dev/null
e2e_check "job $id_low not deferred while idle ($(begin_delay "$id_low")s)" test "$(begin_delay "$id_low")" -lt 300
e2e_check "job $id_low's class on train1 at its normal ceil" wait_ceil "$id_low" 60Mbit 20

# The node agent on train1.
# nsenter execs lanes-agent, so $! is the agent itself (SIGTERM reaches it).
SLURM_CONF=$CLUSTER_CONF nsenter --net="/run/netns/$(cluster_netns train1)" -- \
    "$LANES_BUILDDIR/agent/lanes-agent" --config "$conf" --node train1 2>"$SIG_T/agent.log" &
agent=$!
SIG_PIDS="$SIG_PIDS $agent"
e2e_check "agent running" wait_log 'agent: started on train1' 20 "$SIG_T/agent.log"

# Demand high: the window holds.
echo 50 >"$SIG_T/value"
e2e_check "slurmctld: window busy begins" wait_log 'lanes: window busy begins: demand=50 above 10' 30 "$ctld_log"
# Not as root: root is exempt from the training class's windows in e2e.sh's lanes.toml.
id_busy=$(cluster_sbatch_as "$(cluster_test_user)" -J train-busy -p training -o /dev/null --wrap true)
delay=$(begin_delay "$id_busy")
e2e_check "training job $id_busy deferred by retry while busy (${delay}s)" test "$delay" -ge 590
id_inf=$(cluster_sbatch -J infer-busy -p inference -o /dev/null --wrap true)
e2e_check "inference job $id_inf not deferred ($(begin_delay "$id_inf")s)" test "$(begin_delay "$id_inf")" -lt 300
e2e_check "agent tightened running job $id_low to 45Mbit" wait_ceil "$id_low" 45Mbit 30
grep -q "JobId=$id_low (training) on eth0: ceil 60Mbit -> 45Mbit" "$SIG_T/agent.log" \
    && e2e_pass "agent logged the shift" || e2e_fail "agent shift line: $(tail -5 "$SIG_T/agent.log")"

# Demand falls: training gets its ceil back.
echo 0 >"$SIG_T/value"
e2e_check "agent restored job $id_low to 60Mbit" wait_ceil "$id_low" 60Mbit 30
ends_after() { (($(grep -c 'lanes: window busy ends' "$ctld_log") > ends_before)); }
e2e_check "slurmctld: window busy ends" e2e_wait_until 30 ends_after
state=$(cat "$SIG_T/textfile/lanes_agent.prom" 2>/dev/null)
busy_n=$(sed -n 's/^lanes_agent_shifts_total{class="training",to="busy"} //p' <<<"$state")
normal_n=$(sed -n 's/^lanes_agent_shifts_total{class="training",to="normal"} //p' <<<"$state")
((${busy_n:-0} >= 1 && ${normal_n:-0} >= 1)) && grep -q "JobId=$id_low (training) on eth0: ceil 45Mbit -> 60Mbit" "$SIG_T/agent.log" \
    && e2e_pass "agent counted the shifts (busy $busy_n, normal $normal_n) and logged the restore" \
    || e2e_fail "agent counters: $state"

# Busy again, then stop the agent: the normal ceil is back in the kernel.
echo 50 >"$SIG_T/value"
e2e_check "tightened again" wait_ceil "$id_low" 45Mbit 30
kill -TERM "$agent"
wait "$agent"
agent_rc=$?
e2e_check "agent exit 0 on SIGTERM (got $agent_rc)" test "$agent_rc" -eq 0
e2e_check "normal ceil after the agent stopped" test "$(ceil_on_train1 "$id_low")" = 60Mbit

cluster_run_ctl scancel "$id_low" "$id_busy" "$id_inf" >/dev/null 2>&1
echo 0 >"$SIG_T/value"

# The ceil controller on a two-node training job, an agent on each node. The
# agents read their own lanes.toml (next to the cluster's: its policy path
# resolves): the cluster's without the two-level switch, with the controller
# on the plant's p99 and a textfile each.
id_ctl=$(cluster_sbatch -J train-ctl -N2 -w train1,train2 -p training -o /dev/null --wrap 'srun --ntasks-per-node=1 sleep 600')
e2e_check "two-node training job $id_ctl runs" cluster_wait_job "$id_ctl" RUNNING 60
e2e_check "job $id_ctl at the class's 60Mbit on train1" wait_ceil "$id_ctl" 60Mbit 30
mbit() {  # tc's "60Mbit" / "52500Kbit" -> Mbit/s (integer)
    case $1 in
        *Mbit) echo "${1%Mbit}" | cut -d. -f1 ;;
        *Kbit) echo $((${1%Kbit} / 1000)) ;;
        *) echo 0 ;;
    esac
}
# The plant (bounded: 240 s at most): p99 over the SLO (20 ms > 10 ms) while
# either node's ceil of the job is above 45 Mbit/s, 3 ms at or below.
(
    for ((i = 0; i < 1200; i++)); do
        [[ -f $E2E_STATE_ROOT/train1/job_$id_ctl ]] || break  # the job ended
        a=$(ceil_on train1 "$id_ctl") b=$(ceil_on train2 "$id_ctl")
        [[ -n $a && -n $b ]] || { sleep 0.2; continue; }
        if (($(mbit "$a") > 45 || $(mbit "$b") > 45)); then echo 0.02; else echo 0.003; fi >"$SIG_T/p99.new"
        mv "$SIG_T/p99.new" "$SIG_T/p99"
        sleep 0.2
    done
) &
SIG_PIDS="$SIG_PIDS $!"
plant_scraped() {
    nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" curl -sf -m 10 "http://127.0.0.1:$PROM_PORT/api/v1/query" \
        --data-urlencode 'query=max(lanes_test_demand{job="plant"})' | grep -q '"0.02"'
}
e2e_check "Prometheus has the plant's p99 over the SLO" e2e_wait_until 30 plant_scraped
ctl_agents=()
for node in train1 train2; do
    mkdir -p "$SIG_T/textfile-$node"
    sed -e '/^busy_window = /d' -e '/^busy_ceil = /d' -e "s|^textfile_dir = .*|textfile_dir = \"$SIG_T/textfile-$node\"|" \
        "$conf" >"$(dirname "$conf")/agent-$node.toml"
    cat >>"$(dirname "$conf")/agent-$node.toml" <<TOML

[signals.p99]
url = "http://$CLUSTER_CTL_IP:$PROM_PORT"
query = 'max(lanes_test_demand{job="plant"})'
interval = "1s"
timeout = "500ms"
stale_after = "5s"

[classes.training.control]
signal = "p99"
slo = 0.01
margin = 0.2
floor = "10Mbit"
decrease = 0.5
increase = "20Mbit"
min_gap = "10Mbit"
dwell = "3s"
backoff = "24s"
TOML
    "$LANESCTL" --config "$(dirname "$conf")/agent-$node.toml" check >"$SIG_T/check-$node.out" 2>&1 ||
        e2e_fail "lanesctl check of the controller config: $(cat "$SIG_T/check-$node.out")"
    SLURM_CONF=$CLUSTER_CONF nsenter --net="/run/netns/$(cluster_netns "$node")" -- \
        "$LANES_BUILDDIR/agent/lanes-agent" --config "$(dirname "$conf")/agent-$node.toml" --node "$node" 2>"$SIG_T/agent-$node.log" &
    ctl_agents+=($!)
    SIG_PIDS="$SIG_PIDS $!"
done
agent_metric() {  # NODE PROM-LINE-PREFIX -> value in the node agent's textfile (0 if absent)
    local v
    v=$(grep -F "$2" "$SIG_T/textfile-$1/lanes_agent.prom" 2>/dev/null | awk '{print $2}')
    echo "${v:-0}"
}
ctl_changes() {  # NODE: the class's ceil changes, all causes
    local n=0 c
    for c in over_slo no_value headroom congested; do
        n=$((n + $(agent_metric "$1" "lanes_agent_ceil_changes_total{class=\"training\",cause=\"$c\"}")))
    done
    echo $n
}
decisions_at_least() { (($(agent_metric "$1" 'lanes_agent_ceil_decisions_total{class="training"}') >= $2)); }
for node in train1 train2; do
    e2e_check "$node: the class's 60Mbit broke the SLO: cut to 30Mbit, logged with its cause" \
        wait_log "class training ceil 60Mbit -> 30Mbit on eth0 (cause: p99 0.02 > slo 0.01)" 60 "$SIG_T/agent-$node.log"
done
# Expected: 60 -> 30 -> 45 (the midpoint, held) -> 52.5 (broke) -> 37.5 -> 45;
# the next probe of 52.5 only after the 24 s back-off (8 decisions), then after
# 48 s. So at most one probe (3 changes) in decisions 14..24, and 4 allow one
# decision taken on a late sample; the two-level switch would change the ceil
# at every other decision here.
e2e_check "14 decisions on both nodes" e2e_wait_until 90 eval 'decisions_at_least train1 14 && decisions_at_least train2 14'
start1=$(ctl_changes train1) start2=$(ctl_changes train2)
e2e_check "24 decisions on both nodes" e2e_wait_until 90 eval 'decisions_at_least train1 24 && decisions_at_least train2 24'
steady1=$(($(ctl_changes train1) - start1)) steady2=$(($(ctl_changes train2) - start2))
for node in train1 train2; do grep "class training ceil" "$SIG_T/agent-$node.log" | sed "s/^/  $node: /"; done
e2e_check "few changes in 10 steady decisions (train1 $steady1, train2 $steady2; at most 4)" \
    test "$steady1" -le 4 -a "$steady2" -le 4
settled() {  # both nodes' ceils of the job equal and between the floor and 45Mbit
    local a b
    a=$(ceil_on train1 "$id_ctl") b=$(ceil_on train2 "$id_ctl")
    [[ -n $a && $a == "$b" ]] && (($(mbit "$a") >= 10 && $(mbit "$a") <= 45))
}
e2e_check "job $id_ctl's ceil the same on both nodes, between the floor and 45Mbit ($(ceil_on train1 "$id_ctl"), $(ceil_on train2 "$id_ctl"))" \
    e2e_wait_until 30 settled
for node in train1 train2; do
    over=$(agent_metric "$node" 'lanes_agent_ceil_changes_total{class="training",cause="over_slo"}')
    headroom=$(agent_metric "$node" 'lanes_agent_ceil_changes_total{class="training",cause="headroom"}')
    e2e_check "$node: changes counted by cause (over_slo $over, headroom $headroom)" test "$over" -ge 1 -a "$headroom" -ge 1
    # (The job's ceil never goes below its rate, 40Mbit here: HTB's ceil >= rate.)
    grep -qE "JobId=$id_ctl \(training\) on eth0: ceil 60Mbit -> 40Mbit \(controller: p99 0.02 > slo 0.01\)" \
        "$SIG_T/agent-$node.log" &&
        e2e_pass "$node: the change logged for job $id_ctl" ||
        e2e_fail "$node: no line for job $id_ctl's change: $(grep -m3 "JobId" "$SIG_T/agent-$node.log")"
done
for a in "${ctl_agents[@]}"; do kill -TERM "$a"; done
for a in "${ctl_agents[@]}"; do wait "$a"; done
for node in train1 train2; do
    e2e_check "$node: SIGTERM gave job $id_ctl its own 60Mbit back" test "$(ceil_on "$node" "$id_ctl")" = 60Mbit
done
cluster_run_ctl scancel "$id_ctl" >/dev/null 2>&1
e2e_finish
