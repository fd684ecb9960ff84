#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/readme_debian.sh: runs INSIDE a clean Debian root where
# lanes-slurm-plugins and lanesctl were just installed (tests/pkg/install_test.sh
# and tests/pkg/deb_release.sh run it), as an admin who has only the package:
#
# 1. installing armed nothing: no active plugstack line names spank_lanes, and
#    a real cluster (tests/cluster/cluster.sh) with Debian's plugstack.conf, no
#    lanes.toml and without PrologFlags=Alloc starts, runs a job, and its node
#    is not drained, also after slurmd restarts;
# 2. the commands of README.Debian's "Turning it on" section, taken from the
#    installed README.Debian itself (its lines indented by four spaces), run as
#    written: cp of the examples, lanesctl check, slurm.conf, the plugstack
#    link; `systemctl restart` restarts the test cluster with /etc/slurm's files;
# 3. a job then runs shaped: lanesctl status on its node, asked by the job,
#    lists it in the example's default class.
#
# Needs LANES_SRCDIR with tests/cluster/ (copied into the root). Output: "ok:"
# and "FAIL:" lines; exit 0 when all passed.
set -uo pipefail
: "${LANES_SRCDIR:?the directory holding tests/cluster}"
# shellcheck source=../cluster/cluster.sh
source "$LANES_SRCDIR/tests/cluster/cluster.sh"
failed=0
ok() { printf 'ok: %s\n' "$*"; }
bad() { printf 'FAIL: %s\n' "$*"; failed=1; }
doc=/usr/share/doc/lanes-slurm-plugins
readme=$doc/README.Debian
[[ -e $readme ]] || readme=$readme.gz
[[ -e $readme ]] || { echo "FAIL: $doc/README.Debian is not installed"; exit 1; }
work=$(mktemp -d)
cluster_install_trap
trap 'cluster_stop >/dev/null 2>&1; rm -rf "$work"' EXIT

# 1. Installed, not turned on.
active=$(grep -rls --include='*.conf' '^[[:space:]]*\(required\|optional\)[[:space:]].*spank_lanes' /etc/slurm)
[[ -z $active ]] && ok "no active plugstack line names spank_lanes after installation" ||
    bad "installing armed spank_lanes in: $active"
[[ -r /etc/slurm/plugstack.conf ]] || { echo "FAIL: no /etc/slurm/plugstack.conf (Debian's Slurm ships one)"; exit 1; }
grep -qx 'include /etc/slurm/plugstack.conf.d/\*.conf' /etc/slurm/plugstack.conf &&
    ok "Debian's plugstack.conf includes /etc/slurm/plugstack.conf.d/*.conf" ||
    bad "/etc/slurm/plugstack.conf does not include plugstack.conf.d/*.conf: $(cat /etc/slurm/plugstack.conf)"
[[ ! -e /etc/slurm/lanes.toml ]] || { echo "FAIL: the root already has /etc/slurm/lanes.toml"; exit 1; }

# The cluster reads /etc/slurm's plugstack.conf (which includes what the
# admin links) and slurm.conf lines (appended to the harness's; a later key
# wins), as a site's daemons would. One node, named so the example lanes.toml
# shapes its eth0 ([[nodes.nic]] nodes = "*").
export LANES_CLUSTER_NODES="node1:debug"
start_site_cluster() {
    LANES_CLUSTER_PLUGSTACK=$(cat /etc/slurm/plugstack.conf)
    LANES_CLUSTER_CONF_EXTRA=$(cat "$@" 2>/dev/null)
    export LANES_CLUSTER_PLUGSTACK LANES_CLUSTER_CONF_EXTRA
    cluster_start
}
printf 'PrologFlags=Serial\n' >"$work/no-alloc.conf"
if start_site_cluster "$work/no-alloc.conf"; then
    ok "slurmd starts with the package installed, no lanes.toml and without PrologFlags=Alloc"
    id=$(cluster_sbatch -w node1 -o /dev/null --wrap true) && cluster_wait_job "$id" COMPLETED 60 &&
        ok "a job runs before Lanes is turned on (job $id)" || bad "a job did not run before Lanes is turned on"
    cluster_restart_slurmd node1 && id=$(cluster_sbatch -w node1 -o /dev/null --wrap true) &&
        cluster_wait_job "$id" COMPLETED 60 && ok "and after slurmd restarts (job $id)" ||
        bad "no job ran after slurmd restarted"
    state=$(cluster_run_ctl sinfo -h -N -n node1 -o %t)
    [[ $state == idle ]] && ok "node1 is idle, not drained" || bad "node1 is '$state'"
else
    bad "the cluster did not start with the package installed and Lanes not turned on"
    cluster_dump_logs
fi
cluster_stop >/dev/null 2>&1

# 2. README.Debian's steps, verbatim: the indented lines of "Turning it on".
zcat -f "$readme" | awk '
    /^-+$/ { if (prev == "Turning it on") on = 1; else if (on) exit }
    on && /^    / { print substr($0, 5) }
    { prev = $0 }' >"$work/steps.sh"
grep -q 'plugstack.conf.d' "$work/steps.sh" && grep -q 'lanesctl' "$work/steps.sh" ||
    { cat "$work/steps.sh"; echo "FAIL: no commands found in README.Debian's 'Turning it on'"; exit 1; }
sed 's/^/  README.Debian: /' "$work/steps.sh"
: >/etc/slurm/slurm.conf
restarts=$work/restarts
# `systemctl restart` has no systemd here: record it; the cluster restarts below.
{
    printf 'set -e\n'
    printf 'systemctl() { [ "$1" = restart ] && shift && echo "$*" >>%q; }\n' "$restarts"
    cat "$work/steps.sh"
} >"$work/run.sh"
if (cd / && bash "$work/run.sh") >"$work/steps.log" 2>&1; then
    ok "README.Debian's commands ran as written (lanesctl check passed)"
else
    cat "$work/steps.log"
    bad "README.Debian's commands failed"
fi
grep -qw slurmctld "$restarts" 2>/dev/null && grep -qw slurmd "$restarts" &&
    ok "README.Debian restarts slurmctld and slurmd" || bad "README.Debian does not restart both daemons"

# Roots share the host's cgroup tree, and the package tests of two releases
# run at once: with cgroup_root = "auto" both nodes' job 1 would be
# <cgroup2>/lanes/job_1, and the end of one killed the other's (cgroup.kill).
# The one change to what README.Debian set up: a directory of this run's own,
# as the e2e tests have (LANES_TAG_PREFIX), removed at the end.
cg2=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
    /proc/self/mountinfo | head -1)
own_cgroups=${cg2:-/sys/fs/cgroup}/lanes-${LANES_TAG_PREFIX:-r$$-}readme
sed -i "s|^cgroup_root = \"auto\"|cgroup_root = \"$own_cgroups\"|" /etc/slurm/lanes.toml
grep -q "^cgroup_root = \"$own_cgroups\"" /etc/slurm/lanes.toml ||
    bad "the example lanes.toml has no cgroup_root = \"auto\" line to give this run its own cgroups"
trap 'cluster_stop >/dev/null 2>&1; rmdir "$own_cgroups"/job_* "$own_cgroups" 2>/dev/null; rm -rf "$work"' EXIT

# 3. The site's cluster: /etc/slurm's slurm.conf lines, lanes.toml and policy
# next to slurm.conf (as slurmctld reads them), plugstack.conf from /etc/slurm.
export LANES_CLUSTER_TOML=/etc/slurm/lanes.toml LANES_CLUSTER_FILES=/etc/slurm/lanes.lua
if start_site_cluster /etc/slurm/slurm.conf; then
    ok "the cluster starts with Lanes turned on as README.Debian says"
    # The job asks lanesctl status on its node while it runs (after its
    # prolog, as Slurm orders them), and writes the answer where we read it.
    cat >"$CLUSTER_WORK_DIR/shaped.sh" <<SH
#!/bin/sh
/usr/sbin/lanesctl --json status --config /etc/slurm/lanes.toml --node "\$SLURMD_NODENAME" >"$CLUSTER_WORK_DIR/shaped.\$SLURM_JOB_ID.json" 2>&1
SH
    chmod 755 "$CLUSTER_WORK_DIR/shaped.sh"
    id=$(cluster_sbatch -w node1 -o /dev/null "$CLUSTER_WORK_DIR/shaped.sh") && cluster_wait_job "$id" COMPLETED 90 &&
        ok "a job runs with Lanes on (job $id)" || { bad "the job did not run with Lanes on"; cluster_dump_logs; }
    out=$CLUSTER_WORK_DIR/shaped.$id.json
    if python3 - "$out" "$id" <<'PY'; then
import json, sys
jobs = {j["job_id"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
j = jobs.get(int(sys.argv[2]))
print(f"  job {sys.argv[2]} as lanesctl status sees it on node1: {j}")
sys.exit(0 if j and j.get("class") == "batch" else 1)
PY
        ok "job $id is shaped on node1 in the example's default class (batch)"
    else
        cat "$out" 2>/dev/null
        bad "job $id is not shaped as class batch on node1"
    fi
else
    bad "the cluster did not start with Lanes turned on"
    cluster_dump_logs
fi
((failed)) && exit 1
exit 0
