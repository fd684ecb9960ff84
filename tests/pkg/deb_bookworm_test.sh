#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian packages on Debian 12 (bookworm, Slurm 22.05): built in a clean bookworm root
# from debian/control's Build-Depends alone, lintian clean, installed into
# another clean root with that release's Slurm (units in /lib/systemd/system), and
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
# Debian 12's packages are also what tests/pkg/install_test.sh installs: they
# are shared with it (it waits on the lock while this test runs, and takes them
# when they come from the same distdir as its own; else it builds its own).
export DEB_RELEASE_SHARE_DIR=${LANES_BUILDDIR:?}/tests/pkg/debs-bookworm
mkdir -p "${DEB_RELEASE_SHARE_DIR%/*}"
exec 7>"$DEB_RELEASE_SHARE_DIR.lock"
flock 7
rm -rf "$DEB_RELEASE_SHARE_DIR"
deb_release_run bookworm 22.05 /lib/systemd/system
