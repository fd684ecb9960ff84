#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Lanes against Slurm 24.11, the Slurm of Debian 13 (trixie): build it in a trixie root
# with that root's GCC and libslurm-dev, run the unit tests, and run the
# real-cluster suite (tests/cluster smoke, tests/e2e job_submit, spank, faults,
# lua_and_lanes) with the root's slurmctld, slurmd and munged. Fails when
# anything inside fails, and prints the inner failures. See README.md here.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -uo pipefail
if ((EUID != 0)); then
    echo "SKIP: needs root (a chroot, mount and PID namespaces, Slurm daemons)"
    exit 77
fi
# shellcheck source=slurm_versions.sh
source "${LANES_SRCDIR:?run through make check}/tests/slurm_versions/slurm_versions.sh"
# Debian 13 is the VM node's release too: its binaries go to the VM test
# (tests/vm/cgroup_v2_node_test.sh), which then need not build them again.
SLURM_VERSIONS_SHARE_DIR=${LANES_BUILDDIR:?run through make check}/tests/vm/lanes-trixie \
    slurm_versions_run trixie 24.11
