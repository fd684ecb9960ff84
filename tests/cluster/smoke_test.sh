#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Smoke test of the real-cluster harness (tests/cluster/cluster.sh): the cluster
# starts, runs a batch job on every node (as root and as a non-root user), runs
# srun steps from the ctl namespace, reports partition and node right, and
# cluster_stop leaves no process, namespace or run dir behind.
# make check may start us with /bin/sh: the library needs bash.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -euo pipefail

if ((EUID != 0)); then
    echo "SKIP: needs root (network namespaces, munged, slurmctld, slurmd)"
    exit 77
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ! -f $here/cluster.sh && -n ${LANES_SRCDIR:-} ]]; then
    here=$LANES_SRCDIR/tests/cluster
fi
# shellcheck source=cluster.sh source-path=SCRIPTDIR
source "$here/cluster.sh"

t_begin=$(cluster__now_us)
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
check() { # check WHAT EXPECTED ACTUAL
    [[ $3 == "$2" ]] || fail "$1: expected '$2', got '$3'"
    echo "ok: $1 = $2"
}

cluster_install_trap
cluster_start

# sinfo sees every node in its partition, idle.
for node in "${CLUSTER_NODES[@]}"; do
    got=$(cluster_run_ctl sinfo -h -N -n "$node" -o '%P %t')
    part=${CLUSTER_NODE_PARTITION[$node]}
    [[ $got == "$part idle" || $got == "$part* idle" ]] || fail "sinfo for $node: '$got', expected '$part idle'"
done
echo "ok: sinfo lists ${CLUSTER_NODES[*]} idle in their partitions"

# The job prints what it can see of the node: Slurm's node name, the UTS
# hostname, every address of the node's namespace.
script=$CLUSTER_WORK_DIR/whereami.sh
cat >"$script" <<'EOF'
#!/bin/sh
echo "nodename=$SLURMD_NODENAME"
echo "hostname=$(hostname)"
echo "user=$(id -un)"
echo "addrs= $(hostname -I) "
EOF
chmod 0755 "$script"

# One batch job per node, all submitted before waiting: they run concurrently.
declare -A job=()
for node in "${CLUSTER_NODES[@]}"; do
    job[$node]=$(cluster_sbatch -p "${CLUSTER_NODE_PARTITION[$node]}" -w "$node" -J "smoke-$node" \
        -o "$CLUSTER_WORK_DIR/smoke-$node-%j.out" "$script")
    echo "submitted job ${job[$node]} to $node"
done
test_user=$(cluster_test_user)
user_node=${CLUSTER_NODES[-1]}
user_job=$(cluster_sbatch_as "$test_user" -p "${CLUSTER_NODE_PARTITION[$user_node]}" -w "$user_node" \
    -J smoke-user -o "$CLUSTER_WORK_DIR/smoke-user-%j.out" "$script")
echo "submitted job $user_job to $user_node as $test_user"

for node in "${CLUSTER_NODES[@]}"; do
    id=${job[$node]}
    cluster_wait_job "$id" COMPLETED 30
    out=$CLUSTER_WORK_DIR/smoke-$node-$id.out
    [[ -s $out ]] || fail "job $id on $node: no output file $out"
    grep -qx "nodename=$node" "$out" || fail "job $id: SLURMD_NODENAME is not $node: $(cat "$out")"
    grep -qx "hostname=$node" "$out" || fail "job $id: hostname is not $node: $(cat "$out")"
    ip4=$(cluster_node_ip "$node" 4)
    ip6=$(cluster_node_ip "$node" 6)
    grep -q " $ip4 " "$out" || fail "job $id: the node's fabric address $ip4 is missing: $(cat "$out")"
    grep -q " $ip6 " "$out" || fail "job $id: the node's fabric address $ip6 is missing: $(cat "$out")"
    check "job $id Partition" "${CLUSTER_NODE_PARTITION[$node]}" "$(cluster_job_field "$id" Partition)"
    check "job $id NodeList" "$node" "$(cluster_job_field "$id" NodeList)"
    check "job $id ExitCode" "0:0" "$(cluster_job_field "$id" ExitCode)"
    echo "ok: job $id ran on $node ($ip4, $ip6)"
done

cluster_wait_job "$user_job" COMPLETED 30
out=$CLUSTER_WORK_DIR/smoke-user-$user_job.out
grep -qx "user=$test_user" "$out" || fail "job $user_job did not run as $test_user: $(cat "$out")"
check "job $user_job UserId" "$test_user($(id -u "$test_user"))" "$(cluster_job_field "$user_job" UserId)"
echo "ok: job $user_job ran on $user_node as $test_user"

# The fabric carries IPv4 and IPv6 TCP between nodes (later tests mark DSCP on
# both families).
src=${CLUSTER_NODES[0]}
dst=${CLUSTER_NODES[-1]}
port=5201
iperf_listening() { [[ -n $(cluster_run_node "$dst" ss -Hltn "sport = :$port") ]]; }
for fam in 4 6; do
    ip=$(cluster_node_ip "$dst" "$fam")
    cluster_run_node "$dst" timeout 20 iperf3 -s -1 -p "$port" >"$CLUSTER_WORK_DIR/iperf3-server-$fam.log" 2>&1 &
    srv=$!
    cluster__wait_until 10 "iperf3 server on $dst" iperf_listening || fail "iperf3 server on $dst did not start"
    cluster_run_node "$src" timeout 10 iperf3 -c "$ip" -p "$port" -n 256K >"$CLUSTER_WORK_DIR/iperf3-client-$fam.log" 2>&1 ||
        fail "no IPv$fam TCP from $src to $dst ($ip): $(tail -5 "$CLUSTER_WORK_DIR/iperf3-client-$fam.log")"
    wait "$srv" || fail "iperf3 server on $dst failed: $(tail -5 "$CLUSTER_WORK_DIR/iperf3-server-$fam.log")"
    echo "ok: IPv$fam TCP $src -> $dst ($ip) across the bridge"
done

# srun from the ctl namespace: slurmd connects back to srun there.
infer=$(for n in "${CLUSTER_NODES[@]}"; do [[ ${CLUSTER_NODE_PARTITION[$n]} == inference ]] && echo "$n"; done | head -1)
infer=${infer:-${CLUSTER_NODES[-1]}}
# shellcheck disable=SC2016 # expanded by the job's shell
# (srun waits for its allocation as long as it takes: bounded here.)
got=$(cluster_run_ctl timeout --foreground -k 10 180 srun -p "${CLUSTER_NODE_PARTITION[$infer]}" -w "$infer" -N1 -n1 \
    sh -c 'echo "$SLURMD_NODENAME $(hostname)"')
check "srun on $infer" "$infer $infer" "$got"

# A two-node step: both nodes' slurmd connect back to srun, and with
# PrologFlags=Alloc both prologs come from slurmctld.
training=()
for n in "${CLUSTER_NODES[@]}"; do [[ ${CLUSTER_NODE_PARTITION[$n]} == training ]] && training+=("$n"); done
if ((${#training[@]} >= 2)); then
    # shellcheck disable=SC2016 # expanded by the job's shell
got=$(cluster_run_ctl timeout --foreground -k 10 180 srun -p training -N2 -n2 -w "${training[0]},${training[1]}" -l hostname | sort | tr '\n' ' ')
    check "srun -N2 on training" "0: ${training[0]} 1: ${training[1]} " "$got"
fi

# A job still running when the cluster stops (cluster_stop cancels it, so its
# slurmstepd and tasks end), and a stray process in a node's namespace that
# Slurm knows nothing about (cluster_stop finds it by its namespace).
cluster_run_node "${CLUSTER_NODES[1]}" sleep 301 </dev/null >/dev/null 2>&1 &
long=$(cluster_sbatch -w "${CLUSTER_NODES[0]}" -p "${CLUSTER_NODE_PARTITION[${CLUSTER_NODES[0]}]}" \
    -o /dev/null --wrap 'sleep 300')
cluster_wait_job "$long" RUNNING 30
deadline=$(($(cluster__now_us) + 10000000))
until [[ $(cluster_pids | xargs -r ps -o comm= -p | grep -cx sleep) == 2 ]]; do
    (($(cluster__now_us) < deadline)) || fail "job $long's sleep and the stray sleep are not both in the cluster's namespaces"
    sleep 0.1
done
mapfile -t pids < <(cluster_pids)
ps -o args= -p "$(IFS=,; echo "${pids[*]}")" | grep -qx 'sleep 301' ||
    fail "the stray 'sleep 301' is not among the cluster's processes: ${pids[*]}"
((${#pids[@]} >= 5)) || fail "only ${#pids[@]} processes in the cluster's namespaces: ${pids[*]}"
pids+=("$CLUSTER_MUNGED_PID")
echo "ok: ${#pids[@]} processes belong to the cluster (daemons, slurmstepd, job $long)"
comms=$(ps -o comm= -p "$(IFS=,; echo "${pids[*]}")" | sort | uniq -c | tr -s ' \n' ' ')
echo "    $comms"
[[ $comms == *slurmstepd* ]] || fail "no slurmstepd among the cluster's processes: $comms"

prefix=$CLUSTER_PREFIX
start_s=$CLUSTER_START_SECONDS
dir=$CLUSTER_DIR
cluster_stop 0
for p in "${pids[@]}"; do
    ! cluster__alive "$p" || fail "process $p ($(cat "/proc/$p/comm" 2>/dev/null)) survived cluster_stop"
done
ns_left=$(ip netns list | awk -v p="$prefix" 'index($1, p) == 1 { print $1 }')
[[ -z $ns_left ]] || fail "namespaces left after cluster_stop: $ns_left"
if [[ ${LANES_KEEP_CLUSTER:-0} != 1 ]]; then
    [[ ! -e $dir ]] || fail "run dir $dir left after cluster_stop"
fi
cluster_stop 0 # a second call is a no-op
echo "ok: cluster_stop left no process, namespace or run dir"

echo "PASS: smoke test in $(cluster__secs $(($(cluster__now_us) - t_begin))) s (cluster start $start_s s)"
