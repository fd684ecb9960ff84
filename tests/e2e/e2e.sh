# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Shared setup for the end-to-end tests: a real cluster (tests/cluster/cluster.sh)
# with the Lanes plugins from this build loaded, configured by a lanes.toml whose
# "peak" window is placed relative to now (no clock mocking inside slurmctld).
#
#   source "$LANES_SRCDIR/tests/e2e/e2e.sh"
#   e2e_require_root
#   e2e_write_config DIR [peak|offpeak]   # lanes.toml + policy.lua into DIR
#   e2e_start_cluster [extra slurm.conf lines...]
#   e2e_reload CMD...                     # change the config, await slurmctld's verdict
#   e2e_wait_until SECONDS CMD...         # poll CMD every 0.1 s
#   e2e_node_state NODE, e2e_gso_max_size NODE, e2e_break_config, e2e_restore_config
set -uo pipefail
export TZ=UTC

: "${LANES_SRCDIR:?run through make check (LANES_SRCDIR unset)}"
# What is tested: this build's plugins and lanesctl, unless E2E_JOB_SUBMIT_SO,
# E2E_SPANK_SO and E2E_LANESCTL name other files (tests/pkg/install_test.sh
# runs these tests on a Debian root with the .deb installed and no build tree).
if [[ -z ${E2E_JOB_SUBMIT_SO:-} || -z ${E2E_SPANK_SO:-} || -z ${E2E_LANESCTL:-} ]]; then
    : "${LANES_BUILDDIR:?run through make check (LANES_BUILDDIR unset)}"
fi
# shellcheck source=../cluster/cluster.sh
source "$LANES_SRCDIR/tests/cluster/cluster.sh"

E2E_JOB_SUBMIT_SO=${E2E_JOB_SUBMIT_SO:-$LANES_BUILDDIR/job_submit/.libs/job_submit_lanes.so}
E2E_SPANK_SO=${E2E_SPANK_SO:-$LANES_BUILDDIR/spank/.libs/spank_lanes.so}
E2E_LANESCTL=${E2E_LANESCTL:-$LANES_BUILDDIR/lanesctl/lanesctl}
E2E_FAILED=0

e2e_require_root() {
    if ((EUID != 0)); then
        echo "SKIP: $(basename "$0") needs root (it starts slurmctld, slurmd, munged and network namespaces)"
        exit 77
    fi
    for so in "$E2E_JOB_SUBMIT_SO" "$E2E_SPANK_SO" "$E2E_LANESCTL"; do
        [[ -f $so ]] || { echo "FAIL: $so is not built"; exit 1; }
    done
}

e2e_pass() { printf 'ok: %s\n' "$*"; }
e2e_fail() { printf 'FAIL: %s\n' "$*"; E2E_FAILED=1; }
# e2e_check DESCRIPTION CMD...: run CMD; pass/fail with the description.
e2e_check() {
    local what=$1
    shift
    if "$@"; then e2e_pass "$what"; else e2e_fail "$what"; fi
}
# e2e_nft_holds NODE KIND NAME DIR [AFTER]: NODE's `nft list KIND inet lanes NAME`
# (KIND set or map) holds the cgroup DIR, optionally followed by AFTER (a regex,
# e.g. ' : 1a4e:' for the prio map). nft prints a cgroupsv2 element as its path,
# or as the cgroup id (the dir's inode) when it cannot turn the id back into a
# path (cgroups other tests remove during its walk of /sys/fs/cgroup): both count.
e2e_nft_holds() {
    local node=$1 kind=$2 name=$3 dir=$4 after=${5:-} ino listing
    ino=$(stat -c %i "$dir" 2>/dev/null) || ino=none
    listing=$(nsenter --net="/run/netns/${CLUSTER_PREFIX}$node" nft list "$kind" inet lanes "$name" 2>/dev/null)
    [[ -n $after ]] || after='([^0-9]|$)'
    grep -qE "(/${dir##*/}\"|(^|[^0-9])$ino)$after" <<<"$listing"
}
# e2e_start_monitoring DIR [GLOBAL_YAML [SCRAPE_YAML]]: on train1's loopback,
# prometheus-node-exporter (the textfile collector only, reading DIR/textfile)
# on :9100 and prometheus on :9090 scraping it every second (as job "node";
# data and logs in DIR). GLOBAL_YAML adds top-level lines (e.g. rule_files),
# SCRAPE_YAML more scrape_configs entries. Appends both PIDs to the caller's
# mon_pids array; the caller stops them.
e2e_start_monitoring() {
    local dir=$1 global=${2:-} scrape=${3:-} ns=/run/netns/${CLUSTER_PREFIX}train1
    mkdir -p "$dir/textfile"
    nsenter --net="$ns" -- prometheus-node-exporter --web.listen-address=127.0.0.1:9100 \
        --collector.disable-defaults --collector.textfile --collector.textfile.directory="$dir/textfile" \
        >"$dir/node-exporter.log" 2>&1 &
    mon_pids+=($!)
    printf 'global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n%s\nscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ["127.0.0.1:9100"]\n%s\n' \
        "$global" "$scrape" >"$dir/prometheus.yml"
    nsenter --net="$ns" -- prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
        --web.listen-address=127.0.0.1:9090 --log.level=warn >"$dir/prometheus.log" 2>&1 &
    mon_pids+=($!)
}
# e2e_prom_query PROMQL: the HTTP API's JSON answer (from inside train1's namespace).
e2e_prom_query() {
    cluster_run_node train1 python3 -c '
import sys, urllib.parse, urllib.request
url = "http://127.0.0.1:9090/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[1]})
print(urllib.request.urlopen(url, timeout=5).read().decode())' "$1" 2>/dev/null
}
e2e_finish() {
    if ((E2E_FAILED)); then
        cluster_dump_logs 2>&1 | tail -80
        exit 1
    fi
    exit 0
}

# Per-run node state (state_dir, cgroups, last good config) on this machine.
# The cgroup tree is the host's even inside a Debian root's PID namespace
# (tests/slurm_versions), where PIDs start again at 1: the root's runner sets
# LANES_TAG_PREFIX so two roots tested at once never share a cgroup.
CLUSTER_TAG=${CLUSTER_TAG:-${LANES_TAG_PREFIX:-}$$}
E2E_STATE_ROOT=/run/lanes-e2e-$CLUSTER_TAG
E2E_CGROUP_ROOT=/sys/fs/cgroup/unified/lanes-e2e-$CLUSTER_TAG
e2e_on_exit() {
    local rc=$?
    cluster_stop "$rc"
    rm -rf "$E2E_STATE_ROOT"
    local d
    for d in "$E2E_CGROUP_ROOT"/*/job_* "$E2E_CGROUP_ROOT"/* "$E2E_CGROUP_ROOT"; do
        [[ -d $d ]] && rmdir "$d" 2>/dev/null
    done
    return $rc
}

# e2e_node_state NODE: everything Lanes has on NODE besides its persistent
# root and default class, parked classes and minor claims included; empty when
# the node is clean.
e2e_node_state() {
    local node=$1
    cluster_run_node "$node" tc class show dev eth0 | grep -E 'class htb 1a4e:' | grep -vE 'class htb 1a4e:(1|fffe) ' || true
    cluster_run_node "$node" nft list table inet lanes 2>/dev/null | grep -E 'job_[0-9]+|elements = ' || true
    ls "$E2E_STATE_ROOT/$node" 2>/dev/null | grep -E '^(job_|minor_)' || true
    ls "$E2E_STATE_ROOT/$node/parked" 2>/dev/null || true
    ls "$E2E_CGROUP_ROOT/$node" 2>/dev/null | grep "^job_" || true
}
# e2e_gso_max_size NODE: eth0's gso_max_size on NODE.
e2e_gso_max_size() {
    cluster_run_node "$1" ip -d link show dev eth0 | tr ' ' '\n' | awk '$0 == "gso_max_size" { getline; print; exit }'
}
# e2e_break_config: the cluster's lanes.toml made unparsable, with no last good
# copy left for the nodes: an epilog from now on cannot tear its job down (and
# a prolog cannot shape). The good one is kept in $CLUSTER_WORK_DIR/lanes.toml.good;
# e2e_restore_config puts it back.
e2e_break_config() {
    cp "$CLUSTER_CONF_DIR/lanes.toml" "$CLUSTER_WORK_DIR/lanes.toml.good"
    rm -f "$E2E_STATE_ROOT/last-good.toml"  # shared by the nodes: plugstack.conf's last_good_config
    printf '[classes.training\nrate = "fast"\n' >>"$CLUSTER_CONF_DIR/lanes.toml"
}
e2e_restore_config() { cp "$CLUSTER_WORK_DIR/lanes.toml.good" "$CLUSTER_CONF_DIR/lanes.toml"; }

# HH:MM in UTC, OFFSET minutes from now.
e2e_hhmm() { date -u -d "@$(($(date +%s) + $1 * 60))" +%H:%M; }

# e2e_write_config DIR MODE: MODE "peak" puts now inside the window [now-30m,
# now+60m); "offpeak" puts the window at [now+120m, now+180m).
# E2E_POLICY_TIME_BUDGET (default "250ms") sets [policy] time_budget: on a
# machine other tests load, a benign policy can miss the product's default of
# 20 ms of wall time, and its overrun cooldown then refuses that user's jobs
# for a minute. Tests that check the budget itself (policy_worker_test,
# parallel_submit_test, hostile_policy_test) set it empty: no key is written
# and they set their own or keep the default.
e2e_write_config() {
    local dir=$1 mode=${2:-peak} start end budget=${E2E_POLICY_TIME_BUDGET-250ms}
    if [[ $mode == peak ]]; then
        start=$(e2e_hhmm -30); end=$(e2e_hhmm 60)
        E2E_PEAK_END=$end
    else
        start=$(e2e_hhmm 120); end=$(e2e_hhmm 180)
    fi
    cat >"$dir/lanes.toml" <<TOML
# End-to-end test configuration (generated).
default_class = "training"

[policy]
script = "policy.lua"
on_error = "reject"
${budget:+time_budget = \"$budget\"}

[windows.peak]
timezone = "UTC"
days = "daily"
start = "$start"
end = "$end"

[classes.training]
rank = 1
partitions = ["training"]
avoid_windows = ["peak"]
window_overrun = "warn"
exempt_users = ["root"]
dscp = "CS1"
rate = "40Mbit"
ceil = "60Mbit"
user_may_lower_cap = true
rdma_service_level = 1

[classes.inference]
rank = 7
partitions = ["inference"]
dscp = "AF41"
allowed_users = ["*"]

[classes.plain]
rank = 2
partitions = ["training"]
allowed_users = ["*"]

[classes.vip]
rank = 6
partitions = ["inference"]
dscp = "EF"
allowed_users = ["root"]

[nodes]
# Three slurmd share this machine: give each its own state and cgroup dirs.
state_dir = "$E2E_STATE_ROOT/%n"
cgroup_root = "$E2E_CGROUP_ROOT/%n"

[[nodes.nic]]
nodes = "train[1-2],infer1"
device = "eth0"
link_speed = "1Gbit"
TOML
    cat >"$dir/policy.lua" <<'LUA'
-- End-to-end test policy: inference by name, everything else by lanes.toml.
function classify(job)
  if job.name:match("^infer") then
    return { class = "inference", reason = "name starts with infer" }
  end
  if job.name == "refuse-me" then
    return { reject = "jobs named refuse-me are not allowed here" }
  end
  return nil
end
LUA
}

# e2e_wait_until SECONDS CMD...: run CMD every 0.1 s until it succeeds; 1 if it
# never did within SECONDS (a bound for a hang, not a timing assertion).
# e2e_queue_empty [SQUEUE ARGS...]: true when squeue answered and lists no job.
# A squeue that failed (slurmctld slow to answer on a loaded machine) is not an
# empty queue; a job slurmctld has already forgotten ("Invalid job id") is gone.
e2e_queue_empty() {
    local out err rc
    err=$(mktemp)
    out=$(SLURM_CONF=$CLUSTER_CONF nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" squeue -h -o %i "$@" 2>"$err")
    rc=$?
    if ((rc != 0)) && grep -q "Invalid job id" "$err"; then rc=0; fi
    rm -f "$err"
    ((rc == 0)) && [[ -z $out ]]
}
e2e_wait_until() {
    local tries=$(($1 * 10))
    shift
    while ((tries-- > 0)); do
        "$@" && return 0
        sleep 0.1
    done
    "$@"
}

# How many reload verdicts (taken or refused) slurmctld has logged.
e2e_reload_verdicts() { grep -cE 'lanes: (reloaded|reload failed)' "$(cluster_log slurmctld)"; }

# e2e_reload CMD...: run CMD (it rewrites $CLUSTER_CONF_DIR/lanes.toml or the
# policy) at least a second after the last change, then wait for slurmctld's
# reloader (once a second) to log its verdict on it; 1 if none came in 10 s.
e2e_reload() {
    local before
    before=$(e2e_reload_verdicts)
    sleep 1.1  # a rewrite within the same second is still seen (ns mtime), but keep it clear
    "$@" || return 1
    e2e_wait_until 10 e2e__verdicts_above "$before"
}
e2e__verdicts_above() { (($(e2e_reload_verdicts) > $1)); }

# e2e_start_cluster [extra slurm.conf lines]: job_submit/lanes + spank_lanes loaded.
e2e_start_cluster() {
    local conf_src
    conf_src=$(mktemp -d)
    e2e_write_config "$conf_src" "${E2E_MODE:-peak}"
    export LANES_CLUSTER_TOML=$conf_src/lanes.toml
    export LANES_CLUSTER_FILES="$conf_src/policy.lua ${E2E_EXTRA_FILES:-}"
    export LANES_CLUSTER_PLUGINDIR="${E2E_JOB_SUBMIT_SO%/*}"
    local extra="JobSubmitPlugins=${E2E_JOB_SUBMIT_PLUGINS:-lanes}"
    local line
    for line in "$@"; do extra+=$'\n'"$line"; done
    export LANES_CLUSTER_CONF_EXTRA=$extra
    cluster_hook_pre_start() {
        if [[ ${E2E_INSTALLED_PLUGSTACK:-0} == 1 ]]; then
            # Only in the install test's throw-away root: spank_lanes comes in
            # through the package's /etc/slurm/plugstack.conf.d/lanes.conf,
            # which reads /etc/slurm/lanes.toml.
            cp -- "$1/lanes.toml" /etc/slurm/lanes.toml && cp -- "$1/policy.lua" /etc/slurm/policy.lua &&
                cp -- /etc/slurm/plugstack.conf "$1/plugstack.conf" || return 1
        else
            # Every user's srun/sbatch loads spank_lanes: a readable copy.
            local spank_dir
            spank_dir=$(cluster_plugin_copy_dir) && install -m 0644 -- "$E2E_SPANK_SO" "$spank_dir/" || return 1
            printf 'required %s config=%s/lanes.toml last_good_config=%s/last-good.toml\n' \
                "$spank_dir/${E2E_SPANK_SO##*/}" "$1" "$E2E_STATE_ROOT" >"$1/plugstack.conf"
        fi
        if declare -F e2e_pre_start >/dev/null; then e2e_pre_start "$1"; fi
    }
    cluster_install_trap
    trap 'e2e_on_exit' EXIT
    if [[ ${E2E_EXPECT_START_FAILURE:-0} == 1 ]]; then
        # The caller wants to see a refused start: its output (with the
        # daemons' logs) goes to E2E_START_OUTPUT, the status is returned.
        local rc=0
        cluster_start >"$E2E_START_OUTPUT" 2>&1 || rc=$?
        rm -rf "$conf_src"
        return $rc
    fi
    cluster_start || { echo "FAIL: cluster did not start"; cluster_dump_logs; exit 1; }
    rm -rf "$conf_src"
}
