# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# bench/lanes_cluster.sh: a real Slurm cluster with both Lanes plugins on
# bench/fabric.sh's fabric, as the demo (contrib/demo.sh) and the latency bench
# (bench/run_latency_bench.sh) use it. Source it after bench/fabric.sh, with
# LANES_SRCDIR and LANES_BUILDDIR set, and a fabric made with fabric_create.
#
#   lanes_cluster_start PREFIX TRAIN_RATE TRAIN_CEIL [NAME_PREFIX]
#       writes contrib/demo/lanes.toml.in (training class rate/ceil per node,
#       the peak window hours away, state and cgroups per run) and
#       policies/default.lua, starts munged, slurmctld and slurmd train1 train2
#       infer1 with JobSubmitPlugins=lanes and spank_lanes in plugstack.conf,
#       and attaches the nodes to the fabric as members NAME_PREFIX+node (role
#       "host": only a caller's own "train" hosts carry by-hand load) at
#       $FABRIC_SUBNET.1N. LANES_DEMO_GSO_BURST=T adds gso_burst = "T" to
#       [nodes] (spank_lanes' GSO bound, lanes.toml(5)).
#   lanes_cluster_stop                 stop the cluster, remove state and cgroups
#   lanes_cluster_submit ARGS...       sbatch --parsable from the ctl namespace
#
# After lanes_cluster_start: LANES_CLUSTER_CONF (the lanes.toml the nodes read)
# and everything tests/cluster/cluster.sh provides (cluster_run_ctl, ...).

if [[ -n ${LANES_CLUSTER__LOADED:-} ]]; then
    return 0
fi
LANES_CLUSTER__LOADED=1
: "${LANES_SRCDIR:?set LANES_SRCDIR}" "${LANES_BUILDDIR:?set LANES_BUILDDIR}"
# job_submit/lanes runs the policy in lanes-policy-worker, which a build tree
# has not installed in libexec: slurmctld (and lanesctl) take the build's.
export LANES_POLICY_WORKER=${LANES_POLICY_WORKER:-$LANES_BUILDDIR/policy_worker/lanes-policy-worker}
# shellcheck source=tests/cluster/cluster.sh
source "$LANES_SRCDIR/tests/cluster/cluster.sh"

LANES_CLUSTER_STATE_ROOT=""
LANES_CLUSTER_CGROUP_ROOT=""
LANES_CLUSTER__CONF_SRC=""
LANES_CLUSTER_CONF=""

lanes_cluster_start() {
    local tag=$1 rate=$2 ceil=$3 names=${4:-} src=$LANES_SRCDIR build=$LANES_BUILDDIR
    [[ -n ${FABRIC_PREFIX:-} ]] || { echo "lanes_cluster: no fabric (fabric_create first)" >&2; return 1; }
    LANES_CLUSTER_STATE_ROOT=/run/lanes-$tag
    LANES_CLUSTER_CGROUP_ROOT=/sys/fs/cgroup/unified/lanes-$tag
    [[ -d /sys/fs/cgroup/unified ]] || LANES_CLUSTER_CGROUP_ROOT=/sys/fs/cgroup/lanes-$tag
    LANES_CLUSTER__CONF_SRC=$(mktemp -d) || return 1
    local conf=$LANES_CLUSTER__CONF_SRC hhmm
    hhmm() { date -u -d "@$(($(date +%s) + $1 * 60))" +%H:%M; }
    sed -e "s|@PEAK_START@|$(hhmm 180)|" -e "s|@PEAK_END@|$(hhmm 360)|" \
        -e "s|@TRAIN_RATE@|$rate|" -e "s|@TRAIN_CEIL@|$ceil|" \
        -e "s|@STATE_ROOT@|$LANES_CLUSTER_STATE_ROOT|" -e "s|@CGROUP_ROOT@|$LANES_CLUSTER_CGROUP_ROOT|" \
        -e "s|@FABRIC_SUBNET@|$FABRIC_SUBNET.0/24|" \
        "$src/contrib/demo/lanes.toml.in" >"$conf/lanes.toml" || return 1
    if [[ -n ${LANES_DEMO_GSO_BURST:-} ]]; then
        sed -i -e '/^gso_burst = /d' -e "/^\[nodes\]\$/a gso_burst = \"$LANES_DEMO_GSO_BURST\"" "$conf/lanes.toml" || return 1
    fi
    cp "$src/policies/default.lua" "$conf/lanes.lua" || return 1
    export LANES_CLUSTER_TOML=$conf/lanes.toml LANES_CLUSTER_FILES=$conf/lanes.lua
    export LANES_CLUSTER_PLUGINDIR=$build/job_submit/.libs
    export LANES_CLUSTER_CONF_EXTRA="JobSubmitPlugins=lanes"
    LANES_CLUSTER__STATE_FOR_HOOK=$LANES_CLUSTER_STATE_ROOT
    cluster_hook_pre_start() {
        local spank_dir
        spank_dir=$(cluster_plugin_copy_dir) && install -m 0644 -- "$LANES_BUILDDIR/spank/.libs/spank_lanes.so" "$spank_dir/" ||
            return 1
        printf 'required %s config=%s/lanes.toml last_good_config=%s/last-good.toml\n' \
            "$spank_dir/spank_lanes.so" "$1" "$LANES_CLUSTER__STATE_FOR_HOOK" >"$1/plugstack.conf"
    }
    cluster_start >/dev/null 2>&1 || { cluster_dump_logs; return 1; }
    LANES_CLUSTER_CONF=$CLUSTER_CONF_DIR/lanes.toml
    local node n role
    for node in train1 train2 infer1; do
        n=${node: -1}; [[ $node == infer1 ]] && n=3
        role=$([[ $node == infer1 ]] && echo infer || echo train)
        [[ -n $names ]] && role=host
        fabric_attach "$(cluster_netns "$node")" "$role" "$FABRIC_SUBNET.$((n + ${LANES_CLUSTER_ADDR_BASE:-10}))" \
            "$FABRIC_SUBNET6::$((n + ${LANES_CLUSTER_ADDR_BASE:-10}))" fab0 "$names$node" >/dev/null || return 1
    done
}

lanes_cluster_submit() {
    local out
    out=$(cd "$CLUSTER_WORK_DIR" && cluster_run_ctl sbatch --parsable "$@" 2>&1) || {
        echo "lanes_cluster: sbatch $*: $out" >&2
        return 1
    }
    printf '%s\n' "${out%%;*}"
}

lanes_cluster_stop() {
    local rc=${1:-0}
    [[ -n $LANES_CLUSTER__CONF_SRC ]] || return 0
    cluster_stop "$rc" >/dev/null 2>&1
    rm -rf "$LANES_CLUSTER_STATE_ROOT" "$LANES_CLUSTER__CONF_SRC"
    find "$LANES_CLUSTER_CGROUP_ROOT" -depth -type d -exec rmdir {} + 2>/dev/null
    LANES_CLUSTER__CONF_SRC=""
}
