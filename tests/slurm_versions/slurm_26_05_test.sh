#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Lanes against Slurm 26.05, the Slurm of Debian unstable (sid): build it in a sid root
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
slurm_versions_run sid 26.05
