#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A path per class on a real cluster: train1 has a second uplink (a bulk fabric
# straight to infer1) and lanes.toml gives the training class
# egress_device = that uplink with egress_prefixes = [infer1's address]. A
# training job's traffic to infer1 leaves on the bulk uplink, not on eth0 (each
# uplink's byte counters), its tasks get NCCL_SOCKET_IFNAME for it, lanesctl
# status names the path, and once the job is cancelled no rule, route or table of
# the path is left on train1. The bulk fabric does not reach slurmctld: the
# job's own `srun` still launches its step, its traffic to slurmctld taking the
# main table (Lanes' table holds no default route).
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
E2E_MODE=offpeak e2e_start_cluster
work=$CLUSTER_WORK_DIR
infer_ip=${CLUSTER_NODE_IP[infer1]}
ns_train=$(cluster_netns train1)
ns_infer=$(cluster_netns infer1)

# The bulk fabric: lb1 on train1 <-> lb2 on infer1.
ip -n "$ns_train" link add lb1 type veth peer name lb2 netns "$ns_infer" || e2e_fail "bulk veth"
ip -n "$ns_train" addr add 10.201.0.1/24 dev lb1
ip -n "$ns_infer" addr add 10.201.0.2/24 dev lb2
ip -n "$ns_train" link set lb1 up
ip -n "$ns_infer" link set lb2 up

e2e_reload sed -i 's|^rdma_service_level = 1$|rdma_service_level = 1\negress_device = "lb1"\negress_prefixes = ["'"$infer_ip"'/32"]|' \
    "$CLUSTER_CONF_DIR/lanes.toml" || e2e_fail "slurmctld did not reload lanes.toml"
e2e_check "slurmctld took the lanes.toml with the path" \
    grep -q 'lanes: reloaded' "$(cluster_log slurmctld)"

tx_bytes() {  # NODE DEV
    cluster_run_node "$1" ip -j -s link show dev "$2" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])'
}
rules() { cluster_run_node train1 ip "$1" rule show pref 14000; }

cluster_run_node infer1 iperf3 -s -1 -D -p 5231 --logfile "$work/iperf-path.log"
sleep 0.5
cat >"$work/path.sh" <<SH
#!/bin/sh
env | grep -E '^(LANES_|NCCL_|UCX_)' | sort >"$work/path-env-\$SLURM_JOB_ID"
iperf3 -c $infer_ip -p 5231 -t 2 -b 20M >"$work/path-iperf-\$SLURM_JOB_ID.txt" 2>&1
# A step: srun talks to slurmctld, which the bulk fabric does not reach.
timeout 60 srun -n1 sh -c 'echo step ran on \$SLURMD_NODENAME' >"$work/path-srun-\$SLURM_JOB_ID.txt" 2>&1
echo "srun rc=\$?" >>"$work/path-srun-\$SLURM_JOB_ID.txt"
touch "$work/path-done-\$SLURM_JOB_ID"
sleep 300
SH
chmod 755 "$work/path.sh"
bulk0=$(tx_bytes train1 lb1)
fab0=$(tx_bytes train1 eth0)
id=$(cluster_sbatch -J train-path -w train1 -p training -o "$work/path-%j.out" "$work/path.sh")
e2e_check "training job starts" cluster_wait_job "$id" RUNNING 30
e2e_wait_until 90 test -e "$work/path-done-$id" || e2e_fail "the job's iperf3 and srun did not finish"
bulk=$(($(tx_bytes train1 lb1) - bulk0))
fab=$(($(tx_bytes train1 eth0) - fab0))
echo "training job $id: $bulk bytes on the bulk uplink lb1, $fab bytes on eth0"
e2e_check "the training job's flow left on the bulk uplink ($bulk bytes)" test "$bulk" -gt 4000000
e2e_check "and not on eth0 ($fab bytes)" test "$fab" -lt 1000000
e2e_check "train1's slurmd logged the path" grep -q "lanes: JobId=$id class training takes path lb1" "$(cluster_log train1)"
e2e_check "an ip rule for the class (IPv4)" test "$(rules -4 | grep -c 'fwmark 0x4c4e')" -eq 1
e2e_check "and IPv6" test "$(rules -6 | grep -c 'fwmark 0x4c4e')" -eq 1
cat "$work/path-srun-$id.txt"
e2e_check "the job's srun launched its step (slurmctld by the main table)" grep -q "step ran on train1" "$work/path-srun-$id.txt"
e2e_check "and returned 0" grep -qx "srun rc=0" "$work/path-srun-$id.txt"
table=$(rules -4 | sed -n 's/.* lookup \([0-9a-fx]*\).*/\1/p')
routes=$(cluster_run_node train1 ip route show table "$table")
echo "train1's table $table: $routes"
e2e_check "Lanes' table routes lb1's subnet and infer1's address via lb1" \
    bash -c 'grep -q "^10.201.0.0/24 dev lb1 " <<<"$1" && grep -q "^$2 dev lb1 " <<<"$1"' _ "$routes" "$infer_ip"
e2e_check "and has no default route" bash -c '! grep -q default <<<"$1"' _ "$routes"
e2e_check "the task sees NCCL_SOCKET_IFNAME==lb1" grep -qx 'NCCL_SOCKET_IFNAME==lb1' "$work/path-env-$id"
e2e_check "and UCX_NET_DEVICES=lb1" grep -qx 'UCX_NET_DEVICES=lb1' "$work/path-env-$id"
status=$(cluster_run_node train1 "$E2E_LANESCTL" --config "$CLUSTER_CONF_DIR/lanes.toml" status --node train1)
e2e_check "lanesctl status on train1 names the job's path" grep -q "^path: JobId=$id training: lb1 (table 0x4c4e" <<<"$status"

cluster_run_ctl scancel "$id"
e2e_check "job ends" cluster_wait_job "$id" CANCELLED 60
gone() { [[ -z $(rules -4)$(rules -6) ]] && ! cluster_run_node train1 nft list table inet lanes_paths >/dev/null 2>&1; }
e2e_check "after the job no rule or nft table of the path is left on train1" e2e_wait_until 30 gone
e2e_finish
