#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# (#21 part 2) Ingress caps through the real plugins: a training job submitted
# with --lanes-cap=out=50Mbit,in=20Mbit gets a class on its node's IFB with
# the 20Mbit ceil (the class's ingress_ceil is 30Mbit), a stream from infer1
# into the job (iperf3 -R) is counted there; more than the class is refused at
# submit, naming the direction and the key; the job's end leaves no IFB and no
# netdev table on the node.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root
e2e_pre_start() {  # CONF_DIR: the training class gets ingress caps
    sed -i 's/^ceil = "60Mbit"/ceil = "60Mbit"\ningress_rate = "10Mbit"\ningress_ceil = "30Mbit"/' "$1/lanes.toml"
}
E2E_MODE=offpeak e2e_start_cluster
work=$CLUSTER_WORK_DIR
infer_ip=${CLUSTER_NODE_IP[infer1]}
ifbs() { cluster_run_node "$1" ip -o link show | grep -o 'lanes-ifb[0-9a-f]\{6\}' | sort -u; }

# More than the class: refused at submit, naming the direction and the key.
out=$(cd "$work" && cluster_run_ctl sbatch --parsable -p training --lanes-cap=out=50Mbit,in=40Mbit \
    -o /dev/null --wrap true 2>&1)
rc=$?
e2e_check "--lanes-cap in= above the class refused" test "$rc" -ne 0
e2e_check "the refusal names in= and ingress_ceil ($out)" \
    grep -q "in=40Mbit is above class 'training' ingress_ceil of 30Mbit" <<<"$out"

cluster_run_node infer1 iperf3 -s -1 -D -p 5231 --logfile "$work/iperf-ingress.log"
sleep 0.5
cat >"$work/ingress.sh" <<SH
#!/bin/sh
iperf3 -c $infer_ip -p 5231 -R -t 3 -J >"$work/ingress-iperf-\$SLURM_JOB_ID.json"
sleep 300
SH
chmod 755 "$work/ingress.sh"
id=$(cluster_sbatch -J train-ingress -w train1 -p training --lanes-cap=out=50Mbit,in=20Mbit \
    -o "$work/ingress-%j.out" "$work/ingress.sh")
e2e_check "training job with an ingress cap starts" cluster_wait_job "$id" RUNNING 30
for _ in $(seq 150); do
    [[ -s $work/ingress-iperf-$id.json ]] && grep -q '"end"' "$work/ingress-iperf-$id.json" && break
    sleep 0.1
done
ifb=$(ifbs train1)
e2e_check "train1 has one IFB ($ifb)" test "$(wc -w <<<"$ifb")" -eq 1
class=$(cluster_run_node train1 tc -s class show dev "$ifb" | grep -A1 -E 'class htb 1a4e:[0-9a-f]+ parent 1a4e:1 .*rate 10Mbit ceil 20Mbit')
e2e_check "the job's IFB class has the lowered ingress ceil 20Mbit" test -n "$class"
received=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bytes"]))' \
    "$work/ingress-iperf-$id.json" 2>/dev/null || echo 0)
bps=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]))' \
    "$work/ingress-iperf-$id.json" 2>/dev/null || echo 0)
counted=$(awk '/Sent/ {print $2; exit}' <<<"$class")
echo "job $id received $received bytes at $((bps / 1000)) kbit/s (ingress ceil 20Mbit); its IFB class counted ${counted:-0}"
e2e_check "the stream reached the job ($received bytes)" test "$received" -gt 500000
e2e_check "the job's IFB class counted the stream (${counted:-0} >= $received)" test "${counted:-0}" -ge "$received"

cluster_run_ctl scancel "$id"
e2e_check "job ends" cluster_wait_job "$id" CANCELLED 30
gone=no
for _ in $(seq 100); do
    if [[ -z $(ifbs train1) ]] && ! cluster_run_node train1 nft list tables | grep -q "netdev lanes_in"; then
        gone=yes
        break
    fi
    sleep 0.1
done
e2e_check "no IFB and no netdev table left on train1 after the job" test "$gone" = yes
e2e_finish
