# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# tests/cluster/cluster.sh: a real Slurm cluster (munged, slurmctld, three slurmd)
# inside private network namespaces, for end-to-end tests and the demo.
#
#   source tests/cluster/cluster.sh
#   cluster_install_trap          # stop everything on EXIT/INT/TERM
#   cluster_start                 # prints "cluster: up: 3 nodes idle in 2.1 s ..."
#   id=$(cluster_sbatch -p inference -w infer1 --wrap hostname)
#   cluster_wait_job "$id" COMPLETED 30
#   cluster_stop
#
# Needs root. Touches nothing of the machine's Slurm or munge setup: every file
# (keys, sockets, slurm.conf, state, spool, logs) lives in one run dir made by
# mktemp -d under ${TMPDIR:-/tmp}, and daemons and clients find slurm.conf through
# SLURM_CONF. The only things outside the run dir are the network namespaces
# (/run/netns/<prefix>*) and, if a test asks for it, the system user "lanesuser".
#
# Topology (P = per-run prefix such as "lc4711-", X = per-run subnet number):
#
#     netns P"fab": bridge br0 (no addresses; tcpdump it with cluster_run_fab)
#          |vctl            |vn1              |vn2              |vn3
#     netns P"ctl"     netns P"train1"   netns P"train2"   netns P"infer1"
#       eth0 10.77.X.254  eth0 10.77.X.11   eth0 10.77.X.12   eth0 10.77.X.13
#       fd00:77:X::254    fd00:77:X::11     fd00:77:X::12     fd00:77:X::13
#       slurmctld (UTS    slurmd -N train1  slurmd -N train2  slurmd -N infer1
#        hostname "ctl")  (UTS "train1")    (UTS "train2")    (UTS "infer1")
#       clients: sbatch, srun, scontrol, squeue (cluster_run_ctl)
#
# munged runs in the host namespace; its socket is a file in the run dir that
# every daemon and client reaches through AuthInfo=socket=PATH in slurm.conf.
# Daemons and clients enter namespaces with `nsenter --net=/run/netns/NAME`
# (not `ip netns exec`, which remounts /sys and hides /sys/fs/cgroup). Each daemon
# gets its own UTS namespace (`unshare --uts`) so `hostname` in a job prints the
# node name. Jobs and slurmstepd inherit the slurmd's namespaces, so a job's
# traffic leaves through the node's eth0 and crosses the bridge.
#
# Hooks (environment variables read by cluster_start; all optional):
#   LANES_CLUSTER_CONF_EXTRA    lines appended to slurm.conf (a later key wins),
#                               e.g. "JobSubmitPlugins=lanes"
#   LANES_CLUSTER_PLUGINDIR     colon list put in front of Slurm's plugin dir in
#                               PluginDir (e.g. "$LANES_PLUGINDIR")
#   LANES_CLUSTER_PLUGSTACK     contents of plugstack.conf (PlugStackConfig always
#                               points at the run dir's file, empty by default)
#   LANES_CLUSTER_TOML          a lanes.toml copied next to slurm.conf
#   LANES_CLUSTER_FILES         space-separated files copied next to slurm.conf
#   LANES_CLUSTER_NODES         "name:partition[:features] ..." (default
#                               "train1:training:train train2:training:train
#                               infer1:inference:lowlat"; first partition is Default)
#   LANES_CLUSTER_CPUS          CPUs per node (default: what `slurmd -C` reports)
#   LANES_CLUSTER_MEMORY        RealMemory per node in MB (default 1000)
#   LANES_CLUSTER_DEBUG         SlurmctldDebug/SlurmdDebug level (default "info")
#   LANES_CLUSTER_DAEMON_ENV    space-separated NAME=VALUE words added to the
#                               daemons' otherwise clean environment
#   LANES_CLUSTER_TIMEOUT       seconds to wait for all nodes idle (default 60)
#   LANES_SLURM_PLUGINDIR       Slurm's own plugin dir (default: autodetected)
#   LANES_CLUSTER_USER          non-root user for cluster_sbatch_as & co
#                               (default "lanesuser", created on first use)
#   LANES_KEEP_CLUSTER=1        cluster_stop keeps the run dir (logs, configs)
#   LANES_CLUSTER_ACCOUNTING=1  accounting: a MariaDB server (own datadir in the
#                               run dir, on 127.0.0.1 of the ctl namespace only)
#                               and slurmdbd (ctl namespace) start before
#                               slurmctld; slurm.conf gets
#                               AccountingStorageType=accounting_storage/slurmdbd
#                               and AccountingStorageEnforce=associations, and
#                               the cluster is added with sacctmgr. A function
#                               cluster_hook_accounting, if defined, is called
#                               then (sacctmgr -i add account/user ...: use
#                               cluster_run_ctl), so slurmctld starts with them.
# A shell function named cluster_hook_pre_start, if defined, is called after the
# configuration is written and before any Slurm daemon starts, with the conf dir
# as $1 (write extra files there, edit slurm.conf, ...).
#
# After cluster_start these are set (and saved in $CLUSTER_DIR/cluster.env, so
# another shell can `cluster_attach DIR`):
#   CLUSTER_DIR CLUSTER_CONF_DIR CLUSTER_CONF CLUSTER_LOG_DIR CLUSTER_WORK_DIR
#   CLUSTER_PREFIX CLUSTER_NODES (array) CLUSTER_PARTITIONS (array)
#   CLUSTER_NODE_PARTITION/CLUSTER_NODE_IP/CLUSTER_NODE_IP6 (by node name)
#   CLUSTER_CTL_IP CLUSTER_CTL_IP6 CLUSTER_SUBNET CLUSTER_SUBNET6
#   CLUSTER_CTLD_PORT CLUSTER_SLURMD_PORT CLUSTER_MUNGE_SOCKET
#   CLUSTER_START_SECONDS (time cluster_start took)
#   CLUSTER_DBD_PORT CLUSTER_MARIADB_PID CLUSTER_SLURMDBD_PID (accounting only)
# CLUSTER_WORK_DIR is mode 1777: put job scripts and output files there.

if [[ -n ${CLUSTER__LOADED:-} ]]; then
    return 0
fi
CLUSTER__LOADED=1

# ---------------------------------------------------------------- small helpers

cluster__say() { printf 'cluster: %s\n' "$*" >&2; }
cluster__fail() { printf 'cluster: ERROR: %s\n' "$*" >&2; return 1; }

# Microseconds since the epoch (bash 5).
cluster__now_us() { local t=${EPOCHREALTIME/[.,]/}; printf '%s\n' "$((10#$t))"; }

# cluster__secs US: microseconds as "1.23".
cluster__secs() { printf '%d.%02d' "$(($1 / 1000000))" "$((($1 % 1000000) / 10000))"; }

cluster__slurm_plugindir() {
    if [[ -n ${LANES_SLURM_PLUGINDIR:-} ]]; then
        printf '%s\n' "$LANES_SLURM_PLUGINDIR"
        return 0
    fi
    local arch="" d
    arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || true)
    for d in ${arch:+/usr/lib/$arch/slurm-wlm} /usr/lib/x86_64-linux-gnu/slurm-wlm \
             /usr/lib/aarch64-linux-gnu/slurm-wlm /usr/lib64/slurm /usr/lib/slurm \
             /usr/local/lib/slurm; do
        if [[ -f $d/auth_munge.so ]]; then
            printf '%s\n' "$d"
            return 0
        fi
    done
    cluster__fail "cannot find Slurm's plugin dir (auth_munge.so); set LANES_SLURM_PLUGINDIR"
}

cluster__check_tools() {
    local t missing=()
    for t in munged munge unmunge slurmctld slurmd sbatch srun scontrol sinfo squeue \
             ip nsenter unshare setpriv find stat; do
        command -v "$t" >/dev/null 2>&1 || missing+=("$t")
    done
    if ((${#missing[@]})); then
        cluster__fail "missing programs: ${missing[*]} (apt-get install slurmctld slurmd slurm-client munge iproute2 util-linux)"
        return 1
    fi
}

# cluster__wait_until TIMEOUT_S WHAT CMD...: poll CMD every 50 ms until it
# succeeds; CMD returning 99 means "will never succeed" (a daemon died).
cluster__wait_until() {
    local timeout=$1 what=$2 rc
    shift 2
    local deadline=$(($(cluster__now_us) + timeout * 1000000))
    while :; do
        rc=0
        "$@" >/dev/null 2>&1 || rc=$?
        ((rc == 0)) && return 0
        if ((rc == 99)); then
            cluster__fail "gave up waiting for $what: the daemon exited"
            return 1
        fi
        if (($(cluster__now_us) > deadline)); then
            cluster__fail "timed out after ${timeout}s waiting for $what"
            return 1
        fi
        sleep 0.05
    done
}

# Is PID alive? A zombie or a process past the point of no return is not.
cluster__alive() {
    local s=""
    [[ -n ${1:-} ]] || return 1
    read -r s 2>/dev/null <"/proc/$1/stat" || return 1
    s=${s##*) }
    [[ ${s%% *} != [ZX] ]]
}

# Is PID still the program NAME (guards against a recycled PID)?
cluster__pid_is() {
    local pid=$1 name=$2 comm=""
    [[ -r /proc/$pid/comm ]] || return 1
    read -r comm <"/proc/$pid/comm" 2>/dev/null || return 1
    [[ $comm == "$name"* ]]
}

# ---------------------------------------------------------------- accessors

cluster__need() {
    if [[ -z ${CLUSTER_DIR:-} ]]; then
        cluster__fail "no cluster: call cluster_start (or cluster_attach DIR) first"
        return 1
    fi
}

# cluster_netns NODE|ctl|fab: the network namespace's name.
cluster_netns() {
    cluster__need || return 1
    case $1 in
        ctl | fab) printf '%s\n' "${CLUSTER_PREFIX}$1" ;;
        *)
            if [[ -z ${CLUSTER_NODE_IP[$1]:-} ]]; then
                cluster__fail "unknown node '$1' (nodes: ${CLUSTER_NODES[*]})"
                return 1
            fi
            printf '%s\n' "${CLUSTER_PREFIX}$1"
            ;;
    esac
}

# cluster_node_ip NODE [4|6]: the node's fabric address ("ctl" works too).
cluster_node_ip() {
    cluster__need || return 1
    local node=$1 family=${2:-4}
    if [[ $node == ctl ]]; then
        [[ $family == 6 ]] && printf '%s\n' "$CLUSTER_CTL_IP6" || printf '%s\n' "$CLUSTER_CTL_IP"
        return 0
    fi
    cluster_netns "$node" >/dev/null || return 1
    [[ $family == 6 ]] && printf '%s\n' "${CLUSTER_NODE_IP6[$node]}" || printf '%s\n' "${CLUSTER_NODE_IP[$node]}"
}

# cluster_log NAME: path of a log (slurmctld, munged, or a node name).
cluster_log() {
    cluster__need || return 1
    case $1 in
        slurmctld | ctl) printf '%s\n' "$CLUSTER_LOG_DIR/slurmctld.log" ;;
        munged | munge) printf '%s\n' "$CLUSTER_LOG_DIR/munged.log" ;;
        *)
            cluster_netns "$1" >/dev/null || return 1
            printf '%s\n' "$CLUSTER_LOG_DIR/slurmd-$1.log"
            ;;
    esac
}

# The clean environment daemons and clients get.
cluster__env() {
    local -a e=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
                "SLURM_CONF=$CLUSTER_CONF" LANG=C.UTF-8)
    [[ -n ${TZ:-} ]] && e+=("TZ=$TZ")
    # The build tree's policy worker (make check sets it) for job_submit/lanes.
    [[ -n ${LANES_POLICY_WORKER:-} ]] && e+=("LANES_POLICY_WORKER=$LANES_POLICY_WORKER")
    local w
    for w in ${LANES_CLUSTER_DAEMON_ENV:-}; do e+=("$w"); done
    printf '%s\0' "${e[@]}"
}

# ---------------------------------------------------------------- running things

# cluster_run_ctl CMD...: run CMD in the client/ctl namespace with SLURM_CONF set.
cluster_run_ctl() {
    cluster__need || return 1
    SLURM_CONF=$CLUSTER_CONF nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" -- "$@"
}

# cluster_run_node NODE CMD...: run CMD in a node's network namespace (ctl, fab too).
cluster_run_node() {
    cluster__need || return 1
    local ns
    ns=$(cluster_netns "$1") || return 1
    shift
    SLURM_CONF=$CLUSTER_CONF nsenter --net="/run/netns/$ns" -- "$@"
}

# cluster_run_fab CMD...: run CMD in the fabric namespace (bridge br0, ports vctl, vnN).
cluster_run_fab() { cluster_run_node fab "$@"; }

# cluster_test_user: print the non-root test user, creating it if absent.
cluster_test_user() {
    local u=${LANES_CLUSTER_USER:-lanesuser}
    if ! id -u "$u" >/dev/null 2>&1; then
        if ((EUID != 0)); then
            cluster__fail "user '$u' does not exist and only root can create it"
            return 1
        fi
        # Two tests may race to create it, and two useradds at once can both
        # succeed, the second rewriting the first's entry with another uid
        # (shadow-maint/shadow#1649; seen here: "setpriv: uid 999 not found"
        # in a test that had read 999): one at a time, under a lock.
        (
            flock 9 || exit 1
            id -u "$u" >/dev/null 2>&1 ||
                useradd --system --user-group --no-create-home --home-dir /nonexistent \
                    --shell /usr/sbin/nologin --comment "Lanes test user" "$u" >/dev/null 2>&1
        ) 9>>/run/lanes-test-user.lock
        if ! id -u "$u" >/dev/null 2>&1; then
            cluster__fail "cannot create test user '$u' (useradd failed)"
            return 1
        fi
    fi
    printf '%s\n' "$u"
}

# cluster_run_as USER CMD...: run CMD as USER (real and effective ids, its groups)
# in the ctl namespace, in CLUSTER_WORK_DIR, with a clean environment plus
# SLURM_CONF. LD_PRELOAD and friends given by the caller in CMD (via env) work,
# which is what forgery tests need: sbatch/srun are not setuid.
cluster_run_as() {
    cluster__need || return 1
    local user=$1
    shift
    local uid gid
    uid=$(id -u "$user") || { cluster__fail "no such user '$user'"; return 1; }
    gid=$(id -g "$user") || return 1
    (
        cd "$CLUSTER_WORK_DIR" || exit 1
        exec env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
            "SLURM_CONF=$CLUSTER_CONF" LANG=C.UTF-8 "USER=$user" "LOGNAME=$user" \
            "HOME=$CLUSTER_WORK_DIR" ${TZ:+"TZ=$TZ"} \
            nsenter --net="/run/netns/${CLUSTER_PREFIX}ctl" -- \
            setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$@"
    )
}

# cluster_run_test_user CMD...: cluster_run_as with cluster_test_user.
cluster_run_test_user() {
    local u
    u=$(cluster_test_user) || return 1
    cluster_run_as "$u" "$@"
}

# cluster_sbatch ARGS...: sbatch --parsable from the ctl namespace (as root, in
# CLUSTER_WORK_DIR); prints the job id.
cluster_sbatch() {
    cluster__need || return 1
    local out
    out=$(cd "$CLUSTER_WORK_DIR" && cluster_run_ctl sbatch --parsable "$@") || {
        cluster__fail "sbatch $* failed: $out"
        return 1
    }
    printf '%s\n' "${out%%;*}"
}

# cluster_sbatch_as USER ARGS...: the same, submitted by USER.
cluster_sbatch_as() {
    local user=$1 out
    shift
    out=$(cluster_run_as "$user" sbatch --parsable "$@") || {
        cluster__fail "sbatch (as $user) $* failed: $out"
        return 1
    }
    printf '%s\n' "${out%%;*}"
}

# ---------------------------------------------------------------- jobs

# cluster_job_field JOBID FIELD: one field of `scontrol show job` (values with
# spaces, such as Command= or Reason=, are kept whole up to the next Key=).
cluster_job_field() {
    cluster__need || return 1
    local out
    out=$(cluster_run_ctl scontrol show job "$1" 2>&1) || {
        cluster__fail "scontrol show job $1: $out"
        return 1
    }
    awk -v key="$2" '
        BEGIN { found = 0 }
        {
            line = " " $0
            i = index(line, " " key "=")
            if (i == 0) next
            rest = substr(line, i + length(key) + 2)
            if (match(rest, / [A-Za-z][A-Za-z0-9_:\/]*=/)) rest = substr(rest, 1, RSTART - 1)
            print rest; found = 1; exit
        }
        END { exit !found }' <<<"$out" || {
        cluster__fail "job $1 has no field '$2'"
        return 1
    }
}

# cluster_wait_job JOBID STATE[|STATE...] [TIMEOUT_S=30]: wait for the job's
# JobState. Fails at once if the job reaches another final state.
cluster_wait_job() {
    cluster__need || return 1
    local id=$1 want=$2 timeout=${3:-30} st=""
    local deadline=$(($(cluster__now_us) + timeout * 1000000))
    while :; do
        st=$(cluster_job_field "$id" JobState 2>/dev/null) || st="(unknown)"
        if [[ "|$want|" == *"|$st|"* ]]; then
            return 0
        fi
        case $st in
            COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | PREEMPTED | BOOT_FAIL | \
                DEADLINE | OUT_OF_MEMORY)
                cluster__fail "job $id is $st, expected $want"
                cluster_run_ctl scontrol show job "$id" >&2 || true
                return 1
                ;;
        esac
        if (($(cluster__now_us) > deadline)); then
            cluster__fail "job $id still $st after ${timeout}s, expected $want"
            cluster_run_ctl scontrol show job "$id" >&2 || true
            cluster_run_ctl sinfo -N -l >&2 || true
            return 1
        fi
        sleep 0.1
    done
}

# cluster_nodes_idle: true when every node is idle.
cluster_nodes_idle() {
    local out n want=${#CLUSTER_NODES[@]}
    out=$(cluster_run_ctl sinfo -h -N -o '%N %t' 2>/dev/null) || return 1
    n=$(awk '$2 == "idle" { print $1 }' <<<"$out" | sort -u | wc -l)
    ((n == want))
}

# cluster_wait_idle [TIMEOUT_S]: wait until every node is idle again.
cluster_wait_idle() {
    cluster__need || return 1
    cluster__wait_until "${1:-30}" "all nodes idle" cluster_nodes_idle || {
        cluster_run_ctl sinfo -N -l >&2 || true
        return 1
    }
}

# ---------------------------------------------------------------- processes

# cluster_pids: PIDs of every process living in this cluster's namespaces
# (daemons, slurmstepd, job tasks, clients), one per line.
cluster_pids() {
    cluster__need || return 1
    local -A ino=()
    local ns i p link
    for ns in "${CLUSTER_NETNS_ALL[@]}"; do
        i=$(stat -L -c %i "/run/netns/$ns" 2>/dev/null) || continue
        ino["net:[$i]"]=1
    done
    ((${#ino[@]})) || return 0
    while read -r p link; do
        p=${p#/proc/}
        p=${p%%/*}
        [[ -n $link && -n ${ino[$link]:-} && $p != "$$" && $p != "$BASHPID" ]] && printf '%s\n' "$p"
    done < <(find /proc/[0-9]*/ns/net -maxdepth 0 -printf '%p %l\n' 2>/dev/null)
    return 0
}

# cluster__kill_pids TIMEOUT_S PID...: TERM, wait, KILL, wait.
cluster__kill_pids() {
    local timeout=$1
    shift
    local p left
    (($#)) || return 0
    kill -TERM "$@" 2>/dev/null
    local deadline=$(($(cluster__now_us) + timeout * 1000000))
    while :; do
        left=()
        for p in "$@"; do cluster__alive "$p" && left+=("$p"); done
        ((${#left[@]})) || return 0
        (($(cluster__now_us) > deadline)) && break
        sleep 0.05
    done
    cluster__say "killing (SIGKILL) after ${timeout}s: ${left[*]}"
    kill -KILL "${left[@]}" 2>/dev/null
    for _ in $(seq 40); do
        left=()
        for p in "$@"; do cluster__alive "$p" && left+=("$p"); done
        ((${#left[@]})) || return 0
        sleep 0.05
    done
    cluster__say "still alive after SIGKILL: ${left[*]}"
    return 1
}

# ---------------------------------------------------------------- logs

# cluster_dump_logs [LINES=40]: tails of every daemon log, to stderr.
cluster_dump_logs() {
    [[ -n ${CLUSTER_DIR:-} && -d ${CLUSTER_LOG_DIR:-/nonexistent} ]] || return 0
    local n=${1:-40} f m
    # *.log: the daemons' log files; *.out: their stdout/stderr (repeats the
    # log once it is open, but holds fatal errors from before that).
    for f in "$CLUSTER_LOG_DIR"/*.log "$CLUSTER_LOG_DIR"/*.out; do
        [[ -s $f ]] || continue
        m=$n
        [[ $f == *.out ]] && m=$(( n < 10 ? n : 10 ))
        printf '==== %s (last %s lines)\n' "$f" "$m" >&2
        tail -n "$m" "$f" >&2
    done
    return 0
}

# ---------------------------------------------------------------- start

# cluster_plugin_copy_dir: a directory every user can read, for copies of
# plugins (PluginDir, plugstack.conf) that may live in a root-only build tree.
cluster_plugin_copy_dir() {
    local d=$CLUSTER_DIR/plugins
    mkdir -p -m 0755 "$d" && chmod 0755 "$d" && printf '%s\n' "$d"
}

cluster__write_conf() {
    local plugindir=$1 cpus=$2 node part feat
    local extra=""
    if [[ -n ${LANES_CLUSTER_PLUGINDIR:-} ]]; then
        # Clients of every user read PluginDir (sbatch refuses an entry it cannot
        # open), and a build tree may sit where only root can go (a clone in a
        # 0700 directory): the plugins are copied where everyone may read them.
        extra=$(cluster_plugin_copy_dir) || return 1
        local dir so dirs
        IFS=: read -r -a dirs <<<"$LANES_CLUSTER_PLUGINDIR"
        for dir in "${dirs[@]}"; do
            for so in "$dir"/*.so; do
                [[ -e $so ]] || continue
                install -m 0644 -- "$so" "$extra/" || { cluster__fail "cannot copy $so"; return 1; }
            done
        done
    fi
    {
        cat <<EOF
# Generated by tests/cluster/cluster.sh for run $CLUSTER_PREFIX.
ClusterName=lanes-test
SlurmctldHost=ctl($CLUSTER_CTL_IP)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CLUSTER_CTLD_PORT
SlurmdPort=$CLUSTER_SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$CLUSTER_MUNGE_SOCKET
PluginDir=${extra:+$extra:}$plugindir
PlugStackConfig=$CLUSTER_CONF_DIR/plugstack.conf
StateSaveLocation=$CLUSTER_DIR/ctl/state
SlurmctldPidFile=$CLUSTER_DIR/ctl/slurmctld.pid
SlurmctldLogFile=$CLUSTER_LOG_DIR/slurmctld.log
SlurmdSpoolDir=$CLUSTER_DIR/nodes/%n/spool
SlurmdPidFile=$CLUSTER_DIR/nodes/%n/slurmd.pid
SlurmdLogFile=$CLUSTER_LOG_DIR/slurmd-%n.log
SlurmctldDebug=${LANES_CLUSTER_DEBUG:-info}
SlurmdDebug=${LANES_CLUSTER_DEBUG:-info}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
$(cluster__accounting_conf)
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# Lanes' trust path: every node's prolog gets slurmctld's copy of the job.
PrologFlags=Alloc
# A no-op Epilog: without one, jobs only start on the scheduler's 1 s tick.
Epilog=$CLUSTER_CONF_DIR/epilog.sh
SchedulerParameters=batch_sched_delay=0,default_queue_depth=100
MailProg=/bin/true
SchedulerType=sched/builtin
MinJobAge=60
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=2
InactiveLimit=0
MessageTimeout=10
SlurmdTimeout=60
SlurmctldTimeout=60
TmpFS=$CLUSTER_DIR/tmp
EOF
        for node in "${CLUSTER_NODES[@]}"; do
            feat=${CLUSTER_NODE_FEATURES[$node]}
            printf 'NodeName=%s NodeAddr=%s NodeHostname=%s CPUs=%s Sockets=1 CoresPerSocket=%s ThreadsPerCore=1 RealMemory=%s%s State=UNKNOWN\n' \
                "$node" "${CLUSTER_NODE_IP[$node]}" "$node" "$cpus" "$cpus" "${LANES_CLUSTER_MEMORY:-1000}" \
                "${feat:+ Features=$feat}"
        done
        local first=1 members
        for part in "${CLUSTER_PARTITIONS[@]}"; do
            members=()
            for node in "${CLUSTER_NODES[@]}"; do
                [[ ${CLUSTER_NODE_PARTITION[$node]} == "$part" ]] && members+=("$node")
            done
            printf 'PartitionName=%s Nodes=%s Default=%s MaxTime=INFINITE State=UP\n' \
                "$part" "$(IFS=,; printf '%s' "${members[*]}")" "$( ((first)) && echo YES || echo NO)"
            first=0
        done
        if [[ -n ${LANES_CLUSTER_CONF_EXTRA:-} ]]; then
            printf '# LANES_CLUSTER_CONF_EXTRA\n%s\n' "$LANES_CLUSTER_CONF_EXTRA"
        fi
    } >"$CLUSTER_CONF"
    printf '%s\n' "${LANES_CLUSTER_PLUGSTACK:-}" >"$CLUSTER_CONF_DIR/plugstack.conf"
    printf '#!/bin/sh\nexit 0\n' >"$CLUSTER_CONF_DIR/epilog.sh"
    chmod 0755 "$CLUSTER_CONF_DIR/epilog.sh"
    chmod 0644 "$CLUSTER_CONF" "$CLUSTER_CONF_DIR/plugstack.conf"
    if [[ -n ${LANES_CLUSTER_TOML:-} ]]; then
        cp -- "$LANES_CLUSTER_TOML" "$CLUSTER_CONF_DIR/lanes.toml" ||
            { cluster__fail "cannot copy LANES_CLUSTER_TOML=$LANES_CLUSTER_TOML"; return 1; }
    fi
    local f
    for f in ${LANES_CLUSTER_FILES:-}; do
        cp -- "$f" "$CLUSTER_CONF_DIR/" || { cluster__fail "cannot copy $f (LANES_CLUSTER_FILES)"; return 1; }
    done
}

cluster__parse_nodes() {
    local spec=${LANES_CLUSTER_NODES:-train1:training:train train2:training:train infer1:inference:lowlat}
    local w name part feat i=0
    CLUSTER_NODES=()
    CLUSTER_PARTITIONS=()
    for w in $spec; do
        IFS=: read -r name part feat <<<"$w"
        if [[ -z $name || -z $part || ! $name =~ ^[a-z][a-z0-9-]{0,15}$ || -n ${CLUSTER_NODE_IP[$name]:-} ]]; then
            cluster__fail "bad LANES_CLUSTER_NODES entry '$w' (want name:partition[:features], unique names)"
            return 1
        fi
        ((++i > 200)) && { cluster__fail "too many nodes"; return 1; }
        CLUSTER_NODES+=("$name")
        CLUSTER_NODE_PARTITION[$name]=$part
        CLUSTER_NODE_FEATURES[$name]=$feat
        CLUSTER_NODE_IP[$name]=$CLUSTER_SUBNET.$((10 + i))
        CLUSTER_NODE_IP6[$name]=$CLUSTER_SUBNET6::$((10 + i))
        [[ " ${CLUSTER_PARTITIONS[*]} " == *" $part "* ]] || CLUSTER_PARTITIONS+=("$part")
    done
    ((${#CLUSTER_NODES[@]})) || { cluster__fail "LANES_CLUSTER_NODES is empty"; return 1; }
}

# cluster__add_member NAME IFNAME_IN_FAB IPV4 IPV6: a namespace on the bridge.
cluster__add_member() {
    local ns=${CLUSTER_PREFIX}$1 port=$2 ip4=$3 ip6=$4 fab=${CLUSTER_PREFIX}fab
    ip netns add "$ns" || return 1
    CLUSTER_NETNS_ALL+=("$ns")
    ip -n "$ns" link set lo up &&
        ip -n "$fab" link add "$port" type veth peer name eth0 netns "$ns" &&
        ip -n "$fab" link set "$port" master br0 up &&
        ip -n "$ns" addr add "$ip4/24" dev eth0 &&
        ip -n "$ns" addr add "$ip6/64" dev eth0 nodad &&
        ip -n "$ns" link set eth0 up
}

cluster__make_fabric() {
    local fab=${CLUSTER_PREFIX}fab node i=0
    ip -n "$fab" link set lo up &&
        ip -n "$fab" link add br0 type bridge stp_state 0 forward_delay 0 &&
        ip -n "$fab" link set br0 up || return 1
    cluster__add_member ctl vctl "$CLUSTER_CTL_IP" "$CLUSTER_CTL_IP6" || return 1
    for node in "${CLUSTER_NODES[@]}"; do
        i=$((i + 1))
        cluster__add_member "$node" "vn$i" "${CLUSTER_NODE_IP[$node]}" "${CLUSTER_NODE_IP6[$node]}" || return 1
    done
}

# slurm.conf's accounting lines.
cluster__accounting_conf() {
    if [[ ${LANES_CLUSTER_ACCOUNTING:-0} != 1 ]]; then
        echo "AccountingStorageType=accounting_storage/none"
        return 0
    fi
    printf '%s\n' "AccountingStorageType=accounting_storage/slurmdbd" \
        "AccountingStorageHost=$CLUSTER_CTL_IP" "AccountingStoragePort=$CLUSTER_DBD_PORT" \
        "AccountingStorageEnforce=associations" \
        "# The munge socket for slurmdbd connections (AuthInfo is not used for them)." \
        "AccountingStoragePass=$CLUSTER_MUNGE_SOCKET"
}

cluster__mariadb_ok() {
    cluster__alive "$CLUSTER_MARIADB_PID" || return 99
    cluster_run_ctl mariadb --no-defaults -S "$CLUSTER_DIR/db/mysqld.sock" -u root -e 'SELECT 1' >/dev/null 2>&1
}

cluster__dbd_ok() {
    cluster__alive "$CLUSTER_SLURMDBD_PID" || return 99
    cluster_run_ctl sacctmgr -n list cluster >/dev/null 2>&1
}

# MariaDB (datadir and socket in the run dir; TCP on the ctl namespace's own
# loopback only) and slurmdbd, then the cluster's record; after munged.
cluster__start_accounting() {
    local d=$CLUSTER_DIR/db
    mkdir -p "$d/data" "$CLUSTER_DIR/dbd" || return 1
    mariadb-install-db --no-defaults --user=root --datadir="$d/data" --skip-test-db \
        --auth-root-authentication-method=socket >"$CLUSTER_LOG_DIR/mariadb-install.log" 2>&1 ||
        { cluster__fail "mariadb-install-db failed (see $CLUSTER_LOG_DIR/mariadb-install.log)"; return 1; }
    cluster__spawn "${CLUSTER_PREFIX}ctl" ctl "$CLUSTER_LOG_DIR/mariadb.out" \
        mariadbd --no-defaults --user=root --datadir="$d/data" --socket="$d/mysqld.sock" \
        --bind-address=127.0.0.1 --port=3306 --pid-file="$d/mariadbd.pid" \
        --log-error="$CLUSTER_LOG_DIR/mariadb.log" --innodb-buffer-pool-size=32M || return 1
    CLUSTER_MARIADB_PID=$CLUSTER__SPAWNED
    cluster__save_state
    cluster__wait_until 60 "MariaDB on $d/mysqld.sock" cluster__mariadb_ok || return 1
    local pw
    pw=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    cluster_run_ctl mariadb --no-defaults -S "$d/mysqld.sock" -u root -e \
        "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pw'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" ||
        { cluster__fail "cannot create the slurmdbd database user"; return 1; }
    (
        umask 077
        printf '%s\n' "# Generated by tests/cluster/cluster.sh for run $CLUSTER_PREFIX." \
            AuthType=auth/munge "AuthInfo=socket=$CLUSTER_MUNGE_SOCKET" DbdHost=ctl \
            "DbdAddr=$CLUSTER_CTL_IP" "DbdPort=$CLUSTER_DBD_PORT" SlurmUser=root \
            "PidFile=$CLUSTER_DIR/dbd/slurmdbd.pid" "LogFile=$CLUSTER_LOG_DIR/slurmdbd.log" \
            "DebugLevel=${LANES_CLUSTER_DEBUG:-info}" StorageType=accounting_storage/mysql \
            StorageHost=127.0.0.1 StoragePort=3306 StorageUser=slurm "StoragePass=$pw" \
            StorageLoc=slurm_acct_db >"$CLUSTER_CONF_DIR/slurmdbd.conf"
    ) || return 1
    cluster__spawn "${CLUSTER_PREFIX}ctl" ctl "$CLUSTER_LOG_DIR/slurmdbd.out" slurmdbd -D || return 1
    CLUSTER_SLURMDBD_PID=$CLUSTER__SPAWNED
    cluster__save_state
    cluster__wait_until 60 "slurmdbd on $CLUSTER_CTL_IP:$CLUSTER_DBD_PORT" cluster__dbd_ok || return 1
    cluster_run_ctl sacctmgr -i add cluster lanes-test >/dev/null ||
        { cluster__fail "sacctmgr add cluster failed"; return 1; }
    if declare -F cluster_hook_accounting >/dev/null; then
        cluster_hook_accounting || { cluster__fail "cluster_hook_accounting failed"; return 1; }
    fi
}

cluster__start_munged() {
    local d=$CLUSTER_DIR/munge
    mkdir -m 0755 "$d" || return 1
    head -c 1024 /dev/urandom >"$d/munge.key" && chmod 0400 "$d/munge.key" || return 1
    local -a envv=()
    mapfile -d '' envv < <(cluster__env)
    CLUSTER_MUNGED_PID=$(
        env -i "${envv[@]}" munged --foreground --force --socket="$CLUSTER_MUNGE_SOCKET" \
            --key-file="$d/munge.key" --pid-file="$d/munged.pid" \
            --log-file="$CLUSTER_LOG_DIR/munged.log" --seed-file="$d/munged.seed" --num-threads=4 \
            >>"$CLUSTER_LOG_DIR/munged.log" 2>&1 </dev/null &
        echo "$!"
    )
    cluster__wait_until 10 "munged on $CLUSTER_MUNGE_SOCKET" cluster__munge_ok || return 1
}

cluster__munge_ok() {
    cluster__alive "$CLUSTER_MUNGED_PID" || return 99
    munge -S "$CLUSTER_MUNGE_SOCKET" -n | unmunge -S "$CLUSTER_MUNGE_SOCKET" >/dev/null || return 1
}

# cluster__spawn NETNS HOSTNAME LOG CMD...: start a daemon in the foreground, in
# NETNS and a new UTS namespace with HOSTNAME, with a clean environment; the
# exec chain (env, nsenter, unshare, sh) keeps one PID, left in CLUSTER__SPAWNED.
# It is started from a subshell, so it is not a child of the caller: a test's
# bare `wait` does not wait for the daemons.
cluster__spawn() {
    local ns=$1 host=$2 log=$3
    shift 3
    local -a envv=()
    mapfile -d '' envv < <(cluster__env)
    CLUSTER__SPAWNED=$(
        # shellcheck disable=SC2016 # $0 and $@ belong to sh
        env -i "${envv[@]}" nsenter --net="/run/netns/$ns" -- unshare --uts -- \
            /bin/sh -c 'hostname "$0" && exec "$@"' "$host" "$@" >>"$log" 2>&1 </dev/null &
        echo "$!"
    )
    [[ -n $CLUSTER__SPAWNED ]]
}

cluster__ctld_up() {
    cluster__alive "$CLUSTER_CTLD_PID" || return 99
    cluster_run_ctl scontrol ping 2>/dev/null | grep -q 'is UP' || return 1
}

cluster__start_slurmd() {
    local node=$1
    mkdir -p "$CLUSTER_DIR/nodes/$node/spool" || return 1
    cluster__spawn "${CLUSTER_PREFIX}$node" "$node" "$CLUSTER_LOG_DIR/slurmd-$node.out" \
        slurmd -D -N "$node" -f "$CLUSTER_CONF" || return 1
    CLUSTER_SLURMD_PID[$node]=$CLUSTER__SPAWNED
}

# cluster_restart_slurmd NODE: stop a node's slurmd by PID and start it again
# (e.g. after installing a new plugin); waits until the node is idle or
# allocated again.
cluster_restart_slurmd() {
    cluster__need || return 1
    local node=$1
    cluster_netns "$node" >/dev/null || return 1
    local pid=${CLUSTER_SLURMD_PID[$node]:-}
    if cluster__alive "$pid" && cluster__pid_is "$pid" slurmd; then
        cluster__kill_pids 10 "$pid" || return 1
    fi
    cluster__start_slurmd "$node" || return 1
    cluster__save_state
    cluster__wait_until 30 "$node to register" cluster__node_up "$node" || return 1
}

# cluster_stop_slurmctld: stop slurmctld by PID (it saves its state); the
# slurmds keep running. cluster_start_slurmctld: start it again from that
# state; waits until it answers.
cluster_stop_slurmctld() {
    cluster__need || return 1
    cluster__kill_pids 30 "$CLUSTER_CTLD_PID" || return 1
}

cluster_start_slurmctld() {
    cluster__need || return 1
    cluster__spawn "${CLUSTER_PREFIX}ctl" ctl "$CLUSTER_LOG_DIR/slurmctld.out" \
        slurmctld -D -i -f "$CLUSTER_CONF" || return 1
    CLUSTER_CTLD_PID=$CLUSTER__SPAWNED
    cluster__save_state
    cluster__wait_until 60 "slurmctld to answer (scontrol ping)" cluster__ctld_up
}

cluster__node_up() {
    cluster__alive "${CLUSTER_SLURMD_PID[$1]}" || return 99
    local st
    st=$(cluster_run_ctl sinfo -h -n "$1" -N -o '%t' 2>/dev/null) || return 1
    [[ $st == idle || $st == mix || $st == alloc ]]
}

cluster__save_state() {
    {
        declare -p CLUSTER_DIR CLUSTER_CONF_DIR CLUSTER_CONF CLUSTER_LOG_DIR CLUSTER_WORK_DIR \
            CLUSTER_PREFIX CLUSTER_NODES CLUSTER_PARTITIONS CLUSTER_NODE_PARTITION \
            CLUSTER_NODE_FEATURES CLUSTER_NODE_IP CLUSTER_NODE_IP6 CLUSTER_CTL_IP CLUSTER_CTL_IP6 \
            CLUSTER_SUBNET CLUSTER_SUBNET6 CLUSTER_CTLD_PORT CLUSTER_SLURMD_PORT \
            CLUSTER_MUNGE_SOCKET CLUSTER_NETNS_ALL CLUSTER_MUNGED_PID CLUSTER_CTLD_PID \
            CLUSTER_SLURMD_PID CLUSTER_START_SECONDS CLUSTER_DBD_PORT CLUSTER_MARIADB_PID \
            CLUSTER_SLURMDBD_PID 2>/dev/null
    } | sed -E -e 's/^declare -- /declare -g /' -e 's/^declare -([a-zA-Z]+) /declare -g\1 /' >"$CLUSTER_DIR/cluster.env.tmp" &&
        mv -f "$CLUSTER_DIR/cluster.env.tmp" "$CLUSTER_DIR/cluster.env"
}

# cluster_attach DIR: adopt a cluster started by another shell (its run dir).
cluster_attach() {
    if [[ ! -r $1/cluster.env ]]; then
        cluster__fail "$1 is not a cluster run dir (no cluster.env)"
        return 1
    fi
    # shellcheck disable=SC1091
    source "$1/cluster.env"
}

cluster__reset_vars() {
    unset CLUSTER_DIR CLUSTER_CONF_DIR CLUSTER_CONF CLUSTER_LOG_DIR CLUSTER_WORK_DIR \
        CLUSTER_PREFIX CLUSTER_CTL_IP CLUSTER_CTL_IP6 CLUSTER_SUBNET CLUSTER_SUBNET6 \
        CLUSTER_CTLD_PORT CLUSTER_SLURMD_PORT CLUSTER_MUNGE_SOCKET CLUSTER_MUNGED_PID \
        CLUSTER_CTLD_PID CLUSTER_NODES CLUSTER_PARTITIONS CLUSTER_NETNS_ALL \
        CLUSTER_NODE_PARTITION CLUSTER_NODE_FEATURES CLUSTER_NODE_IP CLUSTER_NODE_IP6 \
        CLUSTER_SLURMD_PID CLUSTER_DBD_PORT CLUSTER_MARIADB_PID CLUSTER_SLURMDBD_PID
    declare -gA CLUSTER_NODE_PARTITION=() CLUSTER_NODE_FEATURES=() CLUSTER_NODE_IP=() \
        CLUSTER_NODE_IP6=() CLUSTER_SLURMD_PID=()
    declare -ga CLUSTER_NODES=() CLUSTER_PARTITIONS=() CLUSTER_NETNS_ALL=()
}

# cluster_start: start munged, the fabric, slurmctld and the slurmds; wait until
# every node is idle. On failure: logs to stderr, everything stopped, returns 1.
cluster_start() {
    if [[ -n ${CLUSTER_DIR:-} ]]; then
        cluster__fail "a cluster is already running from this shell ($CLUSTER_DIR)"
        return 1
    fi
    if ((EUID != 0)); then
        cluster__fail "cluster_start needs root (network namespaces, munged, slurmd)"
        return 1
    fi
    cluster__check_tools || return 1
    local t0
    t0=$(cluster__now_us)
    cluster__reset_vars
    if ! cluster__start_all "$t0"; then
        cluster__fail "cluster_start failed; logs follow"
        cluster_stop 1
        return 1
    fi
}

cluster__start_all() {
    local t0=$1 plugindir cpus node
    plugindir=$(cluster__slurm_plugindir) || return 1
    cpus=${LANES_CLUSTER_CPUS:-}
    if [[ -z $cpus ]]; then
        cpus=$(slurmd -C 2>/dev/null | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' | head -1)
        [[ -n $cpus ]] || cpus=$(nproc)
    fi

    CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/lanes-cluster.XXXXXX") || return 1
    chmod 0755 "$CLUSTER_DIR" || return 1
    CLUSTER_CONF_DIR=$CLUSTER_DIR/etc
    CLUSTER_CONF=$CLUSTER_CONF_DIR/slurm.conf
    CLUSTER_LOG_DIR=$CLUSTER_DIR/log
    CLUSTER_WORK_DIR=$CLUSTER_DIR/work
    CLUSTER_MUNGE_SOCKET=$CLUSTER_DIR/munge/munge.socket
    mkdir -p "$CLUSTER_CONF_DIR" "$CLUSTER_LOG_DIR" "$CLUSTER_DIR/ctl/state" "$CLUSTER_DIR/tmp" &&
        mkdir -m 1777 "$CLUSTER_WORK_DIR" && chmod 1777 "$CLUSTER_DIR/tmp" || return 1

    # A unique namespace prefix: "ip netns add" fails if the name is taken.
    local try
    for try in 0 1 2 3 4 5 6 7 8 9; do
        if ((try == 0)); then CLUSTER_PREFIX=lc$$-; else CLUSTER_PREFIX=lc$$r$RANDOM-; fi
        [[ -e /run/netns/${CLUSTER_PREFIX}fab ]] && continue
        if ip netns add "${CLUSTER_PREFIX}fab" 2>/dev/null; then
            CLUSTER_NETNS_ALL=("${CLUSTER_PREFIX}fab")
            break
        fi
        CLUSTER_PREFIX=""
    done
    [[ -n $CLUSTER_PREFIX ]] || { cluster__fail "cannot create a network namespace"; return 1; }

    local x=$((RANDOM % 250 + 1))
    CLUSTER_SUBNET=10.77.$x
    CLUSTER_SUBNET6=fd00:77:$x
    CLUSTER_CTL_IP=$CLUSTER_SUBNET.254
    CLUSTER_CTL_IP6=$CLUSTER_SUBNET6::254
    CLUSTER_CTLD_PORT=$((17000 + (RANDOM % 7000) * 2))
    CLUSTER_SLURMD_PORT=$((CLUSTER_CTLD_PORT + 1))
    CLUSTER_DBD_PORT=$((CLUSTER_CTLD_PORT + 2))
    cluster__parse_nodes || return 1
    cluster__save_state

    cluster__make_fabric || { cluster__fail "cannot build the fabric"; return 1; }
    cluster__write_conf "$plugindir" "$cpus" || return 1
    if declare -F cluster_hook_pre_start >/dev/null; then
        cluster_hook_pre_start "$CLUSTER_CONF_DIR" || { cluster__fail "cluster_hook_pre_start failed"; return 1; }
    fi
    cluster__start_munged || return 1
    cluster__save_state
    if [[ ${LANES_CLUSTER_ACCOUNTING:-0} == 1 ]]; then
        cluster__start_accounting || return 1
    fi

    cluster__spawn "${CLUSTER_PREFIX}ctl" ctl "$CLUSTER_LOG_DIR/slurmctld.out" \
        slurmctld -D -i -f "$CLUSTER_CONF" || return 1
    CLUSTER_CTLD_PID=$CLUSTER__SPAWNED
    cluster__save_state
    cluster__wait_until 30 "slurmctld to answer (scontrol ping)" cluster__ctld_up || return 1

    for node in "${CLUSTER_NODES[@]}"; do
        cluster__start_slurmd "$node" || return 1
    done
    cluster__save_state

    local timeout=${LANES_CLUSTER_TIMEOUT:-60}
    local deadline=$(($(cluster__now_us) + timeout * 1000000))
    until cluster_nodes_idle; do
        for node in "${CLUSTER_NODES[@]}"; do
            cluster__alive "${CLUSTER_SLURMD_PID[$node]}" ||
                { cluster__fail "slurmd on $node exited during start"; return 1; }
        done
        cluster__alive "$CLUSTER_CTLD_PID" || { cluster__fail "slurmctld exited during start"; return 1; }
        if (($(cluster__now_us) > deadline)); then
            cluster__fail "nodes not idle after ${timeout}s"
            cluster_run_ctl sinfo -N -l >&2 || true
            return 1
        fi
        sleep 0.05
    done
    local t=$(($(cluster__now_us) - t0))
    CLUSTER_START_SECONDS=$(cluster__secs "$t")
    cluster__save_state
    cluster__say "up: ${#CLUSTER_NODES[@]} nodes idle in ${CLUSTER_START_SECONDS} s" \
        "(run dir $CLUSTER_DIR, netns ${CLUSTER_PREFIX}*, ctl $CLUSTER_CTL_IP:$CLUSTER_CTLD_PORT)"
}

# ---------------------------------------------------------------- stop

# cluster_stop [STATUS]: stop everything this cluster started, by PID: slurmd,
# slurmctld, every process left in the cluster's namespaces (slurmstepd, job
# tasks, clients), munged; delete the namespaces; remove the run dir unless
# LANES_KEEP_CLUSTER=1. A STATUS other than 0 or 77 first dumps the logs' tails.
# Safe to call twice, and from a trap.
cluster_stop() {
    local -
    set +e +o pipefail
    local status=${1:-0} rc=0
    if [[ -z ${CLUSTER_DIR:-} ]]; then
        return 0
    fi
    if [[ $status != 0 && $status != 77 ]]; then
        cluster_dump_logs 40
    fi
    local -a pids=() snapshot=()
    local p node
    mapfile -t snapshot < <(cluster_pids)
    # Jobs still queued or running are cancelled first, so their epilogs (and
    # the plugins' cleanup) run while the daemons are still there. Bounded.
    if cluster__alive "${CLUSTER_CTLD_PID:-}"; then
        local jobs
        jobs=$(cluster_run_ctl squeue -h -o %i 2>/dev/null | tr '\n' ' ')
        if [[ -n ${jobs// /} ]]; then
            cluster__say "cancelling jobs still in the queue: $jobs"
            # shellcheck disable=SC2086
            cluster_run_ctl scancel $jobs 2>/dev/null
            cluster__wait_until 10 "cancelled jobs to leave the queue" cluster__queue_empty ||
                cluster_run_ctl squeue >&2
        fi
    fi
    for node in "${CLUSTER_NODES[@]}"; do
        p=${CLUSTER_SLURMD_PID[$node]:-}
        cluster__alive "$p" && cluster__pid_is "$p" slurmd && pids+=("$p")
    done
    p=${CLUSTER_CTLD_PID:-}
    cluster__alive "$p" && cluster__pid_is "$p" slurmctld && pids+=("$p")
    cluster__kill_pids 10 "${pids[@]}" || rc=1
    # slurmdbd, then MariaDB (a clean shutdown may take a few seconds).
    p=${CLUSTER_SLURMDBD_PID:-}
    if cluster__alive "$p" && cluster__pid_is "$p" slurmdbd; then
        cluster__kill_pids 10 "$p" || rc=1
    fi
    p=${CLUSTER_MARIADB_PID:-}
    if cluster__alive "$p" && cluster__pid_is "$p" mariadbd; then
        cluster__kill_pids 30 "$p" || rc=1
    fi

    # Whatever is left in our namespaces: slurmstepd, job tasks, srun, ...
    for _ in 1 2 3; do
        mapfile -t pids < <(cluster_pids)
        ((${#pids[@]})) || break
        cluster__say "stopping ${#pids[@]} leftover process(es) in the cluster's namespaces: ${pids[*]}"
        cluster__kill_pids 2 "${pids[@]}" || rc=1
    done

    # A process in its last steps of exit has left its namespaces already, so
    # the sweep cannot see it: wait (bounded, no signal) for the ones seen
    # at the start of cluster_stop to be gone.
    local deadline=$(($(cluster__now_us) + 5000000))
    while :; do
        pids=()
        for p in "${snapshot[@]}"; do cluster__alive "$p" && pids+=("$p"); done
        ((${#pids[@]})) || break
        if (($(cluster__now_us) > deadline)); then
            cluster__say "processes still exiting after 5s: ${pids[*]}"
            rc=1
            break
        fi
        sleep 0.05
    done

    p=${CLUSTER_MUNGED_PID:-}
    if cluster__alive "$p" && cluster__pid_is "$p" munged; then
        cluster__kill_pids 5 "$p" || rc=1
    fi

    local ns
    for ns in "${CLUSTER_NETNS_ALL[@]}"; do
        [[ -e /run/netns/$ns ]] || continue
        ip netns delete "$ns" || { cluster__say "cannot delete netns $ns"; rc=1; }
    done

    if [[ ${LANES_KEEP_CLUSTER:-0} == 1 ]]; then
        cluster__say "kept run dir $CLUSTER_DIR (LANES_KEEP_CLUSTER=1)"
    else
        rm -rf -- "$CLUSTER_DIR" || rc=1
    fi
    cluster__reset_vars
    return $rc
}

cluster__queue_empty() {
    local q
    q=$(cluster_run_ctl squeue -h -o %i 2>/dev/null) || return 1
    [[ -z $q ]]
}

# cluster_install_trap: cluster_stop on EXIT (passing the exit status, so logs
# are dumped on failure), INT and TERM.
cluster_install_trap() {
    trap 'cluster__on_exit' EXIT
    trap 'cluster__on_signal INT 130' INT
    trap 'cluster__on_signal TERM 143' TERM
}

cluster__on_exit() {
    local rc=$?
    cluster_stop "$rc"
    return $rc
}

cluster__on_signal() {
    cluster__say "caught SIG$1, stopping the cluster"
    trap - EXIT
    cluster_stop "$2"
    exit "$2"
}
