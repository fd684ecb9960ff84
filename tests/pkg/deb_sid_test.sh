#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian packages on Debian unstable (sid, Slurm 26.05): built in a clean sid root
# from debian/control's Build-Depends alone, lintian clean, installed into
# another clean root with that release's Slurm (units in /usr/lib/systemd/system), and
# README.Debian's steps followed there verbatim: a job runs before Lanes is
# turned on, and runs shaped after. See tests/pkg/deb_release.sh.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -uo pipefail
if ((EUID != 0)); then
    echo "SKIP: needs root (chroot, mount and PID namespaces, Slurm daemons)"
    exit 77
fi
# shellcheck source=deb_release.sh
source "${LANES_SRCDIR:?run through make check}/tests/pkg/deb_release.sh"
deb_release_run sid 26.05 /usr/lib/systemd/system
