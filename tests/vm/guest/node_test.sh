#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs INSIDE the VM (as /host/run.sh, started by the VM's init as root): a pure
# cgroup v2 Debian 13 node, Slurm 24.11 with proctrack/cgroup, task/cgroup and
# cgroup/v2, PrologFlags=Alloc,Contain, both Lanes plugins from /host/lanes.
# Traffic leaves through a veth lv0 (10.99.0.1) into a namespace "sink" whose
# nftables count what arrives by DSCP; the real 802.1Q VLAN lv0.42 (10.98.0.1,
# peer lv1.42 in "sink") is the path of the class "bulk", and the sink counts
# the frames tagged 42 on lv1. One line per check in /host/out/results:
#   PASS name | FAIL name: what was seen
set -u
OUT=/host/out
RESULTS=$OUT/results
: >"$RESULTS"
exec > >(tee "$OUT/guest.log") 2>&1
t() { echo "[guest $(cut -d' ' -f1 /proc/uptime)] $*"; }
pass() { echo "PASS $1" >>"$RESULTS"; t "PASS $1"; }
fail() { echo "FAIL $1: $2" >>"$RESULTS"; t "FAIL $1: $2"; }
SINK="ip netns exec sink"
CG=/sys/fs/cgroup

# ---- install the build and the configuration
mkdir -p /usr/local/lib/lanes /etc/slurm /run/munge /run/slurm /run/slurmctld
cp /host/lanes/spank_lanes.so /host/lanes/job_submit_lanes.so /usr/local/lib/lanes/
cp /host/lanes/lanesctl /host/lanes/lanes-agent /usr/local/sbin/
cp /host/files/slurm.conf /host/files/cgroup.conf /host/files/plugstack.conf /host/files/lanes.toml /etc/slurm/
chown munge:munge /run/munge
chown slurm:slurm /run/slurmctld

# ---- the wire: lv0 here, lv1 in "sink", which counts packets by DSCP
ip netns add sink
ip link add lv0 type veth peer name lv1 netns sink
ip addr add 10.99.0.1/24 dev lv0
ip link set lv0 up
$SINK ip link set lo up
$SINK ip addr add 10.99.0.2/24 dev lv1
$SINK ip link set lv1 up
$SINK nft -f - <<'NFT'
table inet wire {
  counter af41 { }
  counter other { }
  chain in {
    type filter hook prerouting priority -300; policy accept;
    ip saddr 10.99.0.1 udp dport 9 ip dscp af41 counter name af41 drop
    ip saddr 10.99.0.1 udp dport 9 counter name other drop
  }
}
NFT
# VLAN 42 on the veth, its own subnet; the sink counts, at lv1's ingress, the
# datagrams that arrive tagged 42 from lv0.42's address and any other tagged ones.
ip link add link lv0 name lv0.42 type vlan id 42
ip addr add 10.98.0.1/24 dev lv0.42
ip link set lv0.42 up
$SINK ip link add link lv1 name lv1.42 type vlan id 42
$SINK ip addr add 10.98.0.2/24 dev lv1.42
$SINK ip link set lv1.42 up
$SINK nft -f - <<'NFT'
table netdev tags {
  counter vlan42 { }
  counter othertag { }
  chain in {
    type filter hook ingress device "lv1" priority 0; policy accept;
    vlan id 42 ip saddr 10.98.0.1 ip daddr 10.99.0.2 udp dport 9 counter name vlan42 drop
    ether type 8021q udp dport 9 counter name othertag drop
  }
}
NFT
# packets bytes of a sink counter
wire() { $SINK nft list counter inet wire "$1" | awk '/packets/ { print $2, $4 }'; }
# N datagrams of 200 bytes to the sink, from a socket this process opens now
# (bash's /dev/udp; batch scripts and --wrap run /bin/sh, hence the script).
send_cmd() { echo "dd if=/dev/zero bs=200 count=$1 status=none >/dev/udp/10.99.0.2/9"; }
printf '#!/bin/bash\ncat /proc/self/cgroup\n%s\n' "$(send_cmd 50)" >/tmp/send.sh
chmod 755 /tmp/send.sh

# ---- Slurm, each daemon in its own service cgroup as systemd would
run_in() {
  local name=$1; shift
  mkdir -p "$CG/system.slice/$name"
  (echo $BASHPID >"$CG/system.slice/$name/cgroup.procs"; exec "$@")
}
run_in munge.service runuser -u munge -- /usr/sbin/munged
run_in slurmctld.service /usr/sbin/slurmctld
# With INVOCATION_ID slurmd believes systemd started it and stays in its service
# cgroup (without, cgroup/v2 moves it into the stepd scope).
run_in slurmd.service env INVOCATION_ID=$(tr -d - </proc/sys/kernel/random/uuid) /usr/sbin/slurmd
for _ in $(seq 120); do sinfo -h -o %T 2>/dev/null | grep -qx idle && break; sleep 0.5; done
t "slurm: $(sinfo -h -o '%N %T') $(slurmd -V)"
sinfo -h -o %T | grep -qx idle || { fail slurm-ready "node not idle: $(sinfo -h -o %T 2>&1)"; }
SCOPE=$(ls -d $CG/system.slice/*slurmstepd.scope 2>/dev/null | head -1)
[ -n "$SCOPE" ] && pass "slurm-scope ${SCOPE#$CG/}" || fail slurm-scope "no stepd scope under system.slice"
grep -q "spank_lanes\|lanes:" /var/log/slurm/slurmd.log && t "slurmd start: $(grep 'lanes:' /var/log/slurm/slurmd.log | head -3)"

wait_job_state() {  # JOBID STATE...
  local id=$1; shift
  for _ in $(seq 120); do
    local st; st=$(squeue -h -j "$id" -o %T 2>/dev/null)
    for want in "$@"; do [ "$st" = "$want" ] && return 0; done
    [ -z "$st" ] && [ "$1" = GONE ] && return 0
    sleep 0.5
  done
  return 1
}
# RUNNING can precede the prolog's end: wait until the job's first (extern) step
# has keyed it on Slurm's cgroup (its state file has a cgroup id).
wait_keyed() {
  for _ in $(seq 120); do grep -q '^cgroup_id=[1-9]' /run/lanes/job_$1 2>/dev/null && return 0; sleep 0.5; done
  return 1
}
# The batch step's task runs (its spank hooks are done): a `sleep` in step_batch
wait_batch_task() {
  local procs=$SCOPE/job_$1/step_batch/user/task_0/cgroup.procs pid
  for _ in $(seq 120); do
    for pid in $(cat "$procs" 2>/dev/null); do
      [ "$(cat /proc/$pid/comm 2>/dev/null)" = sleep ] && return 0
    done
    sleep 0.5
  done
  return 1
}
# The job's HTB class on lv0 (from its state file): "bytes overlimits"
class_stats() {
  local minor; minor=$(awk -F= '$1=="minor" { printf "%x", $2 }' /run/lanes/job_$1 2>/dev/null)
  [ -n "$minor" ] || { echo "0 0"; return; }
  tc -s class show dev lv0 classid 1a4e:$minor | awk '/Sent/ { b=$2 } /overlimits/ { for (i=1;i<=NF;i++) if ($i=="overlimits") o=$(i+1) } END { print b+0, o+0 }'
}
# Every packet from the sender arrived as AF41, none unmarked. $1 name, $2/$3 counters before.
expect_marked() {
  local name=$1 a0=$2 o0=$3 a1 o1
  read -r a1 _ <<<"$(wire af41)"; read -r o1 _ <<<"$(wire other)"
  if [ $((a1 - a0)) -gt 0 ] && [ "$o1" = "$o0" ]; then
    pass "$name: $((a1 - a0)) packets AF41 on the wire, 0 unmarked"
  else
    fail "$name" "AF41 +$((a1 - a0)), unmarked +$((o1 - o0))"
  fi
}

# ---- 1. batch step
read -r A0 _ <<<"$(wire af41)"; read -r O0 _ <<<"$(wire other)"
jid=$(sbatch --parsable -o /tmp/batch-%j.out /tmp/send.sh)
wait_job_state "$jid" GONE || fail batch "job $jid did not end"
t "batch job $jid: $(cat /tmp/batch-$jid.out 2>&1 | head -2)"
grep -q "slurmstepd.scope/job_$jid/step_batch" /tmp/batch-$jid.out \
  && pass "batch: task stays in Slurm's cgroup" || fail batch-cgroup "$(cat /tmp/batch-$jid.out)"
expect_marked batch "$A0" "$O0"
grep "JobId=$jid\|job $jid" /var/log/slurm/slurmd.log | grep lanes | head -5

# ---- 2. srun step, with the cap: a burst far above 4Mbit
jid=$(sbatch --parsable -o /tmp/hold-%j.out --wrap "sleep 300")
wait_job_state "$jid" RUNNING && wait_keyed "$jid" || fail srun "job $jid not running or not keyed"
# The key is Slurm's own job dir (nft prints a cgroupsv2 key as its path).
prio=$(nft list map inet lanes prio 2>&1)
grep -q "slurmstepd.scope/job_$jid\"* : 1a4e:" <<<"$prio" \
  && pass "keyed: @prio holds Slurm's job_$jid dir" || fail keyed "nft map prio: $prio"
read -r A0 _ <<<"$(wire af41)"; read -r O0 _ <<<"$(wire other)"
srun --jobid="$jid" --overlap -n1 bash -c "$(send_cmd 50)" || fail srun "srun exited $?"
expect_marked srun "$A0" "$O0"
read -r b0 ov0 <<<"$(class_stats "$jid")"
srun --jobid="$jid" --overlap -n1 bash -c "dd if=/dev/zero bs=1400 count=2000 status=none >/dev/udp/10.99.0.2/9"
read -r b1 ov1 <<<"$(class_stats "$jid")"
ceil=$(tc class show dev lv0 | awk -v m="$(awk -F= '$1=="minor" { printf "1a4e:%x", $2 }' /run/lanes/job_$jid)" '$3==m { for (i=1;i<=NF;i++) if ($i=="ceil") print $(i+1) }')
if [ "$b1" -gt "$b0" ] && [ "$ov1" -gt "$ov0" ] && [ "$ceil" = 4Mbit ]; then
  pass "cap: the job's class (ceil $ceil) carried $((b1 - b0)) bytes and throttled ($((ov1 - ov0)) overlimits)"
else
  fail cap "class bytes $b0 -> $b1, overlimits $ov0 -> $ov1, ceil '$ceil'"
fi

# ---- 3. a process adopted into the job the way pam_slurm_adopt does it
read -r A0 _ <<<"$(wire af41)"; read -r O0 _ <<<"$(wire other)"
JOBDIR=$(ls -d $CG/system.slice/*slurmstepd.scope/job_$jid)
adopt_into=""
for dir in "$JOBDIR/step_extern" "$JOBDIR/step_extern/user/task_special" "$JOBDIR/step_extern/user"; do
  [ -e "$dir/cgroup.procs" ] || mkdir -p "$dir" 2>/dev/null
  if bash -c "echo \$BASHPID >'$dir/cgroup.procs' 2>/dev/null && exec $(send_cmd 50)"; then adopt_into=$dir; break; fi
done
t "adopted into ${adopt_into#$CG/}"
[ -n "$adopt_into" ] && expect_marked adopted "$A0" "$O0" || fail adopted "no step_extern cgroup took the pid"

# ---- 4. a process outside the job is not the job's class
read -r A0 _ <<<"$(wire af41)"; read -r O0 _ <<<"$(wire other)"
read -r b0 _ <<<"$(class_stats "$jid")"
bash -c "$(send_cmd 50)"
read -r A1 _ <<<"$(wire af41)"; read -r O1 _ <<<"$(wire other)"
read -r b1 _ <<<"$(class_stats "$jid")"
if [ "$A1" = "$A0" ] && [ $((O1 - O0)) -gt 0 ] && [ "$b1" = "$b0" ]; then
  pass "outside: $((O1 - O0)) packets unmarked, none AF41, job class untouched"
else
  fail outside "AF41 +$((A1 - A0)), unmarked +$((O1 - O0)), job class bytes $b0 -> $b1"
fi
scancel "$jid"
wait_job_state "$jid" GONE

# ---- 5. fail closed: the job's Lanes record is gone before a step launches
jid=$(sbatch --parsable -o /dev/null --wrap "sleep 300")
wait_job_state "$jid" RUNNING && wait_keyed "$jid" && wait_batch_task "$jid" ||
  fail fail-closed "job $jid not running, not keyed or its batch task not started"
mv /run/lanes/job_$jid /run/lanes/saved_$jid
err=$(srun --jobid="$jid" --overlap -n1 true 2>&1); rc=$?
mv /run/lanes/saved_$jid /run/lanes/job_$jid
if [ $rc -ne 0 ] && grep -q "JobId=$jid" <<<"$err" && grep -qi "lanes" <<<"$err"; then
  pass "fail-closed: srun refused (rc $rc): $(grep -m1 "JobId=$jid" <<<"$err")"
else
  fail fail-closed "rc $rc, srun said: $err"
fi
scancel "$jid"
wait_job_state "$jid" GONE

# ---- 6. nft flush ruleset under a running job (#19): `lanesctl reconcile`
# puts its marks and class back, and so does lanes-agent on its own.
in_prio() { nft list map inet lanes prio 2>/dev/null | grep -q "slurmstepd.scope/job_$1\"* : 1a4e:"; }
wait_for() {  # SECONDS CMD...: poll every 0.2 s (a bound for a hang, not a timing check)
  local n=$(($1 * 5)); shift
  while [ $n -gt 0 ]; do "$@" && return 0; sleep 0.2; n=$((n - 1)); done
  return 1
}
# The job's packets leave as AF41, none unmarked, and go through its class.
expect_shaped() {  # NAME JOBID
  local a0 o0 b0 b1
  read -r a0 _ <<<"$(wire af41)"; read -r o0 _ <<<"$(wire other)"
  read -r b0 _ <<<"$(class_stats "$2")"
  srun --jobid="$2" --overlap -n1 bash -c "$(send_cmd 50)" || fail "$1" "srun exited $?"
  read -r b1 _ <<<"$(class_stats "$2")"
  expect_marked "$1" "$a0" "$o0"
  [ "$b1" -gt "$b0" ] && pass "$1: the job's class carried $((b1 - b0)) more bytes" ||
    fail "$1-class" "class bytes $b0 -> $b1"
}
jid=$(sbatch --parsable -o /dev/null --wrap "sleep 300")
wait_job_state "$jid" RUNNING && wait_keyed "$jid" && wait_batch_task "$jid" ||
  fail flush "job $jid not running, not keyed or its batch task not started"
nft flush ruleset
# (No step runs between the flush and the checks below: a step's launch
# converges the node too.)
in_prio "$jid" && fail flush "job $jid still keyed after nft flush ruleset"
out=$(lanesctl --config /etc/slurm/lanes.toml reconcile 2>&1); rc=$?
t "lanesctl reconcile (rc $rc): $out"
in_prio "$jid" && pass "flush-reconcile: lanesctl reconcile keyed job $jid again" ||
  fail flush-reconcile "not in @prio after reconcile (rc $rc): $out"
expect_shaped flush-reconcile "$jid"
dry=$(lanesctl --config /etc/slurm/lanes.toml reconcile --dry-run 2>&1) &&
  pass "flush-reconcile: reconcile --dry-run finds nothing more" || fail flush-dry-run "$dry"

mkdir -p "$CG/system.slice/lanes-agent.service"
(echo $BASHPID >"$CG/system.slice/lanes-agent.service/cgroup.procs"
 exec /usr/local/sbin/lanes-agent --config /etc/slurm/lanes.toml >/var/log/lanes-agent.log 2>&1) &
AGENT_PID=$!
METRICS=/run/lanes-textfile/lanes_agent.prom
wait_for 60 test -s "$METRICS" && pass "agent: lanes-agent runs (pid $AGENT_PID)" ||
  fail agent "no metrics: $(tail -5 /var/log/lanes-agent.log)"
nft flush ruleset
wait_for 60 in_prio "$jid" && pass "flush-agent: lanes-agent keyed job $jid again" ||
  fail flush-agent "not in @prio: $(tail -5 /var/log/lanes-agent.log)"
expect_shaped flush-agent "$jid"
tc qdisc del dev lv0 root
job_ceil() { tc class show dev lv0 classid "1a4e:$(awk -F= '$1=="minor" { printf "%x", $2 }' /run/lanes/job_$1)" | grep -o 'ceil [0-9]*Mbit'; }
ceil_back() { [ "$(job_ceil "$jid")" = "ceil 4Mbit" ]; }
wait_for 60 ceil_back && pass "qdisc-agent: the job's class is back at ceil 4Mbit" ||
  fail qdisc-agent "class: $(tc class show dev lv0)"
expect_shaped qdisc-agent "$jid"
t "agent repairs: $(grep '^lanes_agent_repairs_total' "$METRICS" | tr '\n' ' ')"
grep -q 'lanes_agent_repairs_total{object="nft_table",cause="missing"} [1-9]' "$METRICS" &&
  pass "agent-metrics: the nft table repair is counted" || fail agent-metrics "$(cat "$METRICS")"
scancel "$jid"
wait_job_state "$jid" GONE

# ---- 7. churn's teardown: short jobs, one held by the agent through a fault
# in the middle (a flush, then the agent killed and started again); once they
# ended nothing is left.
ids=""
for i in $(seq 12); do
  ids="$ids $(sbatch --parsable -o /dev/null --wrap "sleep $((i % 3 + 1))")"
  if [ "$i" = 6 ]; then
    nft flush ruleset
    kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null
    (echo $BASHPID >"$CG/system.slice/lanes-agent.service/cgroup.procs"
     exec /usr/local/sbin/lanes-agent --config /etc/slurm/lanes.toml >>/var/log/lanes-agent.log 2>&1) &
    AGENT_PID=$!
  fi
done
for id in $ids; do wait_job_state "$id" GONE || fail churn "job $id did not end"; done
churn_left() {
  ls /run/lanes | grep -E '^(job_|minor_)'; ls /run/lanes/parked 2>/dev/null
  tc class show dev lv0 | grep -v -E '1a4e:(1|fffe) '
  nft list table inet lanes 2>/dev/null | grep -E '^\s+elements'; ls -d $CG/lanes/job_* 2>/dev/null
}
wait_for 60 test -z "$(churn_left)" && pass "churn: 12 jobs with a flush and an agent kill -9, nothing left" ||
  fail churn "left: $(churn_left)"
dry=$(lanesctl --config /etc/slurm/lanes.toml reconcile --dry-run 2>&1) &&
  pass "churn: reconcile --dry-run finds nothing to repair" || fail churn-dry-run "$dry"
kill -TERM "$AGENT_PID"; wait "$AGENT_PID"; rc=$?
[ $rc = 0 ] && pass "agent: exits 0 on SIGTERM" || fail agent-exit "rc $rc: $(tail -5 /var/log/lanes-agent.log)"
cp /var/log/lanes-agent.log "$OUT/" 2>/dev/null

# ---- 8. a class on a real 802.1Q VLAN (#21): "bulk" (lanes.toml) has
# egress_device = "lv0", vlan = 42, and a [[rules]] entry gives it the jobs
# that ask for partition "bulk". Its job's datagrams to the sink's 10.99.0.2
# leave tagged 42 from lv0.42's address through the class's ip rule, table and
# lanes_paths element, which exist while the job runs and are gone after it;
# its tasks get NCCL_SOCKET_IFNAME for the VLAN; a process outside the job
# sends untagged as before.
t "vlan: start"
tags() { $SINK nft list counter netdev tags "$1" | awk '/packets/ { print $2 }'; }
# The job's batch script notes its env and sends 50 datagrams, then waits.
printf '#!/bin/bash\nenv | grep -E "^(LANES_|NCCL_|UCX_)" | sort >/tmp/bulk-env-$SLURM_JOB_ID\n%s\nexec sleep 300\n' \
  "$(send_cmd 50)" >/tmp/bulk.sh
chmod 755 /tmp/bulk.sh
T0=$(tags vlan42); X0=$(tags othertag)
read -r A0 _ <<<"$(wire af41)"; read -r O0 _ <<<"$(wire other)"
jid=$(sbatch --parsable -p bulk -o /dev/null /tmp/bulk.sh)
wait_job_state "$jid" RUNNING && wait_keyed "$jid" && wait_batch_task "$jid" ||
  fail vlan "job $jid not running, not keyed or its batch task not started"
REC=/run/lanes/paths/job_$jid
mark=$(awk -F= '$1=="mark" { printf "0x%x", $2 }' "$REC" 2>/dev/null)
table=$(awk -F= '$1=="table" { print $2 }' "$REC" 2>/dev/null)
minor=$(awk -F= '$1=="minor" { printf "%x", $2 }' /run/lanes/job_$jid 2>/dev/null)
t "vlan: job $jid in $(squeue -h -j "$jid" -o %P), path record: $(tr '\n' ' ' <"$REC" 2>&1)"
grep -qx 'class=bulk' "$REC" 2>/dev/null && grep -qx 'device=lv0.42' "$REC" &&
  grep -q "lanes: JobId=$jid class bulk takes path lv0.42" /var/log/slurm/slurmd.log &&
  pass "vlan-path: partition bulk's job $jid is class bulk on lv0.42 (mark $mark)" ||
  fail vlan-path "record: $(tr '\n' ' ' <"$REC" 2>&1); slurmd: $(grep "JobId=$jid" /var/log/slurm/slurmd.log | grep lanes | head -3 | tr '\n' ' ')"
rules4=$(ip -4 rule show pref 14000); rules6=$(ip -6 rule show pref 14000)
route=$([ -n "$table" ] && ip -4 route show table "$table" 2>&1)
marks=$(nft list map inet lanes_paths marks 2>&1)
status=$(lanesctl --config /etc/slurm/lanes.toml status --node lanesvm 2>&1)
if [ -n "$mark" ] && grep -q "fwmark $mark lookup $table" <<<"$rules4" &&
  grep -q "fwmark $mark lookup $table" <<<"$rules6" &&
  grep -q "^10.98.0.0/24 dev lv0.42 .*src 10.98.0.1" <<<"$route" &&
  grep -q "^10.99.0.0/24 dev lv0.42 .*src 10.98.0.1" <<<"$route" &&
  ! grep -q "^default" <<<"$route" &&
  grep -q "1a4e:$minor : $mark" <<<"$marks" &&
  grep -q "^path: JobId=$jid bulk: lv0.42 (table $mark" <<<"$status"; then
  pass "vlan-objects: ip rule (v4, v6) fwmark $mark lookup $table, its routes via lv0.42 (the VLAN's subnet and egress_prefixes, no default), the lanes_paths element and lanesctl status"
else
  fail vlan-objects "$(echo "rules: $rules4 / $rules6; table $table: $route; map: $marks; status: $(grep '^path' <<<"$status")" | tr -s '\n\t' '  ')"
fi
env_file=/tmp/bulk-env-$jid
grep -qx 'NCCL_SOCKET_IFNAME==lv0.42' "$env_file" && grep -qx 'UCX_NET_DEVICES=lv0.42' "$env_file" &&
  grep -qx 'LANES_CLASS=bulk' "$env_file" &&
  pass "vlan-env: the task has NCCL_SOCKET_IFNAME==lv0.42, UCX_NET_DEVICES=lv0.42" ||
  fail vlan-env "task env: $(tr '\n' ' ' <"$env_file" 2>&1)"
# The job's datagrams: all tagged 42, from lv0.42's address, through its class
# on lv0 (which the job created: it carried nothing before). The first one
# waited for ARP on lv0.42: give the rest time to arrive.
all_tagged() { [ $(($(tags vlan42) - T0)) -ge 50 ]; }
wait_for 10 all_tagged
T1=$(tags vlan42); X1=$(tags othertag)
read -r A1 _ <<<"$(wire af41)"; read -r O1 _ <<<"$(wire other)"
b0=0; read -r b1 _ <<<"$(class_stats "$jid")"
if [ $((T1 - T0)) -gt 0 ] && [ "$X1" = "$X0" ] && [ "$A1" = "$A0" ] && [ "$O1" = "$O0" ]; then
  pass "vlan-wire: $((T1 - T0)) packets of the job arrived tagged VLAN 42 from 10.98.0.1, none otherwise"
else
  fail vlan-wire "tagged 42 +$((T1 - T0)), other tags +$((X1 - X0)), untagged AF41 +$((A1 - A0)), untagged other +$((O1 - O0))"
fi
[ "$b1" -gt "$b0" ] && pass "vlan-class: the job's class on lv0 carried $((b1 - b0)) bytes of its VLAN traffic" ||
  fail vlan-class "class bytes $b0 -> $b1"
# A process outside the job does not take the VLAN.
T0=$(tags vlan42); X0=$(tags othertag); read -r O0 _ <<<"$(wire other)"
bash -c "$(send_cmd 50)"
T1=$(tags vlan42); X1=$(tags othertag); read -r O1 _ <<<"$(wire other)"
[ "$T1" = "$T0" ] && [ "$X1" = "$X0" ] && [ $((O1 - O0)) -gt 0 ] &&
  pass "vlan-outside: $((O1 - O0)) packets of a process outside the job arrived untagged, none tagged" ||
  fail vlan-outside "tagged 42 +$((T1 - T0)), other tags +$((X1 - X0)), untagged +$((O1 - O0))"
scancel "$jid"
wait_job_state "$jid" GONE || fail vlan-teardown "job $jid did not end"
path_left() {
  ip -4 rule show pref 14000; ip -6 rule show pref 14000
  [ -n "$table" ] && { ip -4 route show table "$table"; ip -6 route show table "$table"; } 2>/dev/null
  nft list table inet lanes_paths 2>/dev/null | head -3; ls /run/lanes/paths 2>/dev/null | grep '^job_'
}
wait_for 30 test -z "$(path_left)" &&
  pass "vlan-teardown: after job $jid no rule, route, lanes_paths table or path record is left" ||
  fail vlan-teardown "left: $(path_left)"
t "vlan: done"

# ---- 9. teardown: epilogs leave nothing of any job; gc --all leaves nothing at all
sleep 1
left=$(ls /run/lanes | grep '^job_'; tc class show dev lv0 | grep -v -E '1a4e:(1|fffe) '; \
  nft list table inet lanes 2>/dev/null | grep -E '^\s+elements'; ls -d $CG/lanes/job_* 2>/dev/null)
[ -z "$left" ] && pass "teardown: no job state, class or nft element left" || fail teardown "left: $left"
gc_out=$(lanesctl --config /etc/slurm/lanes.toml gc --all 2>&1); gc_rc=$?
left=$(tc qdisc show dev lv0 | grep htb; nft list tables | grep lanes; ls -d $CG/lanes 2>/dev/null)
[ -z "$left" ] && pass "gc --all: no qdisc, table or cgroup left" || fail gc-all "left: $left; lanesctl (rc $gc_rc): $gc_out"

cp /var/log/slurm/*.log "$OUT/" 2>/dev/null
t "done: $(grep -c ^PASS "$RESULTS") passed, $(grep -c ^FAIL "$RESULTS") failed"
for p in $(pgrep -x slurmd) $(pgrep -x slurmctld); do kill "$p"; done
sleep 1
