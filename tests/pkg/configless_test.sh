#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configless Slurm (SlurmctldParameters=enable_configless, slurmd --conf-server):
# what reaches a node from slurmctld and what must be there already.
#
# Slurm 22.05's slurmctld sends slurmd slurm.conf, plugstack.conf and the other
# Slurm files of its fixed list (cgroup.conf, gres.conf, ...) plus files that
# slurm.conf "Include"s (checked: Lanes' slurm.conf lines in an included file
# arrive); never lanes.toml or the Lua policy, nor files plugstack.conf includes. The plugstack.conf
# it sends is used as is, so an "include DIR/*.conf" line there is expanded
# on the node, against the node's own DIR (Debian's plugstack.conf includes
# /etc/slurm/plugstack.conf.d/*.conf, where README.Debian links lanes.conf).
#
# Here train1's slurmd is restarted configless, with no slurm.conf of its own,
# in a private mount namespace where the include directory is train1's own
# (its lanes.conf names a lanes.toml that only train1 sees, with its own
# state_dir). A training job on train1 must then be shaped from that
# lanes.toml, and train1's config cache must hold slurm.conf and
# plugstack.conf but no lanes.toml and no policy.
source "$LANES_SRCDIR/tests/e2e/e2e.sh"
e2e_require_root

# Include dir as every host sees it (ctl's clients, train2, infer1).
e2e_pre_start() {
    local conf=$1 run=${1%/etc}
    mkdir -p "$run/plugstack.conf.d" "$run/train1-local/plugstack.conf.d" "$run/train1-local/etc"
    printf 'required %s config=%s/lanes.toml last_good_config=%s/last-good.toml\n' \
        "$E2E_SPANK_SO" "$conf" "$E2E_STATE_ROOT" >"$run/plugstack.conf.d/lanes.conf"
    printf 'include %s/plugstack.conf.d/*.conf\n' "$run" >"$conf/plugstack.conf"
    # Lanes' slurm.conf lines in a file of their own, as a site may keep them.
    printf '# Lanes (job_submit_lanes(8))\nPrologFlags=Alloc\n' >"$conf/lanes-slurm.conf"
    # train1's own files: a copy of lanes.toml with another state_dir.
    sed "s|^state_dir = .*|state_dir = \"$E2E_STATE_ROOT/configless-%n\"|" "$conf/lanes.toml" \
        >"$run/train1-local/etc/lanes.toml"
    printf 'required %s config=%s/train1-local/etc/lanes.toml last_good_config=%s/configless-last-good.toml\n' \
        "$E2E_SPANK_SO" "$run" "$E2E_STATE_ROOT" >"$run/train1-local/plugstack.conf.d/lanes.conf"
}
E2E_MODE=offpeak e2e_start_cluster "SlurmctldParameters=enable_configless" "Include lanes-slurm.conf"

# Restart train1's slurmd configless. Before it has a slurm.conf, slurmd talks
# to munged on the default socket: in its mount namespace that path is bound
# to the cluster's munged; the include dir is bound to train1's own.
# A configless slurmd also points /run/slurm/conf at its cache: that too is
# bound to a directory of this run. Mount points that do not exist yet are
# made here and removed afterwards.
created_dirs=()
for d in /run/munge /run/slurm; do
    if [[ ! -e $d ]]; then mkdir -m 0755 "$d" && created_dirs+=("$d"); fi
done
mkdir -p "$CLUSTER_DIR/train1-local/run-slurm"
configless_cleanup() {
    local d
    for d in "${created_dirs[@]}"; do rmdir "$d" 2>/dev/null; done
}
trap 'configless_cleanup; e2e_on_exit' EXIT
ln -sf munge.socket "$CLUSTER_DIR/munge/munge.socket.2"

old=${CLUSTER_SLURMD_PID[train1]}
cluster__kill_pids 10 "$old" || { e2e_fail "cannot stop train1's slurmd"; e2e_finish; }
spool=$CLUSTER_DIR/nodes/train1/spool
rm -rf "$spool" && mkdir -p "$spool"
# shellcheck disable=SC2016 # expanded by the inner sh
CLUSTER_SLURMD_PID[train1]=$(
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TZ=UTC \
        nsenter --net="/run/netns/${CLUSTER_PREFIX}train1" -- \
        unshare --uts --mount --propagation private -- /bin/sh -c '
            mount --bind "$1/munge" /run/munge &&
            mount --bind "$1/train1-local/run-slurm" /run/slurm &&
            mount --bind "$1/train1-local/plugstack.conf.d" "$1/plugstack.conf.d" &&
            hostname train1 &&
            exec slurmd -D -N train1 --conf-server "$2"' sh "$CLUSTER_DIR" "$CLUSTER_CTL_IP:$CLUSTER_CTLD_PORT" \
        >>"$CLUSTER_LOG_DIR/slurmd-train1.out" 2>&1 </dev/null &
    echo "$!"
)
cluster__save_state
e2e_check "configless slurmd on train1 registers" \
    cluster__wait_until 30 "train1 to register" cluster__node_up train1

cache=$spool/conf-cache
for _ in $(seq 50); do [[ -s $cache/plugstack.conf ]] && break; sleep 0.1; done
find "$spool" -maxdepth 2 | sed 's/^/  /'
e2e_check "train1 fetched slurm.conf from slurmctld" test -s "$cache/slurm.conf"
e2e_check "train1 fetched plugstack.conf from slurmctld" grep -q '^include ' "$cache/plugstack.conf"
e2e_check "train1 was given the file slurm.conf Includes" grep -qx 'PrologFlags=Alloc' "$cache/lanes-slurm.conf"
e2e_check "train1 was not given the plugstack.conf.d file plugstack.conf includes" test ! -e "$cache/lanes.conf"
e2e_check "train1 was not given lanes.toml (Slurm does not distribute it)" test ! -e "$cache/lanes.toml"
e2e_check "train1 was not given the Lua policy" test ! -e "$cache/policy.lua"
e2e_check "/run/slurm/conf of train1 points at its cache" \
    test "$(readlink "$CLUSTER_DIR/train1-local/run-slurm/conf")" = "$cache"
echo "conf-cache on train1: $(ls "$cache" | tr '\n' ' ')"
e2e_check "train1's slurmd has no slurm.conf of its own (-f not given)" \
    bash -c "! tr '\\0' ' ' </proc/${CLUSTER_SLURMD_PID[train1]}/cmdline | grep -q -- ' -f '"

id=$(cluster_sbatch -J train-configless -w train1 -p training -o /dev/null --wrap 'sleep 120')
e2e_check "training job starts on the configless node" cluster_wait_job "$id" RUNNING 30
for _ in $(seq 100); do [[ -e $E2E_STATE_ROOT/configless-train1/job_$id ]] && break; sleep 0.1; done
e2e_check "spank_lanes on train1 used train1's own lanes.toml (state in its state_dir)" \
    test -e "$E2E_STATE_ROOT/configless-train1/job_$id"
e2e_check "and not the controller's" test ! -e "$E2E_STATE_ROOT/train1/job_$id"
e2e_check "train1 shapes the job: HTB class with the class's rate and ceil" \
    bash -c "nsenter --net=/run/netns/${CLUSTER_PREFIX}train1 tc class show dev eth0 | grep -qE 'rate 40Mbit ceil 60Mbit'"
e2e_check "train1 marks the job: its cgroup is an element of the nft marks" \
    e2e_nft_holds train1 map prio "$E2E_CGROUP_ROOT/train1/job_$id" ' : 1a4e:'
cluster_run_ctl scancel "$id"
e2e_check "job is cancelled" cluster_wait_job "$id" CANCELLED 30
for _ in $(seq 50); do [[ ! -e $E2E_STATE_ROOT/configless-train1/job_$id ]] && break; sleep 0.2; done
e2e_check "its epilog on the configless node removed the state" test ! -e "$E2E_STATE_ROOT/configless-train1/job_$id"
e2e_finish
