#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian packages as a site gets them: built with dpkg-buildpackage from
# `make distdir` (what the release tarball holds), checked by lintian (no
# errors), installed with dpkg into a clean Debian 12 root that has Debian's
# Slurm but no build tree (tests/roots/make_root.sh --runtime, cached), and then the
# real-cluster end-to-end tests run inside that root against the installed
# files only: E2E_JOB_SUBMIT_SO, E2E_SPANK_SO and E2E_LANESCTL name the
# package's files. Before them, tests/pkg/readme_debian.sh: installing armed
# nothing (a job runs without lanes.toml, the node stays idle), then
# README.Debian's commands run verbatim and a job runs shaped; last, one run
# loads spank_lanes through the plugstack.conf.d link README.Debian made and
# /etc/slurm/lanes.toml. (tests/pkg/deb_bookworm_test.sh builds the same
# packages in a clean root from their Build-Depends.)
#
# The .debs are always built from the tree under test (no reuse of earlier
# ones: stale packages once failed spank_test's nft checks): by
# tests/pkg/deb_bookworm_test.sh when it ran in this make check and built them
# from a distdir identical to this one (same file hashes), else here.
# LANES_INSTALL_E2E="job_submit_test.sh ..." chooses the e2e scripts.
set -uo pipefail
: "${LANES_SRCDIR:?run through make check}" "${LANES_BUILDDIR:?run through make check}"
if ((EUID != 0)); then
    echo "SKIP: $(basename "$0") needs root (chroot, mounts, a real cluster)"
    exit 77
fi
for t in dpkg-buildpackage lintian mmdebstrap zstd unshare chroot; do
    command -v "$t" >/dev/null || { echo "FAIL: $t missing (contrib/install-deps.sh installs it)"; exit 1; }
done
now() { date +%s; }
t0=$(now)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/lanes-install.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT
failed=0
ok() { printf 'ok: %s\n' "$*"; }
bad() { printf 'FAIL: %s\n' "$*"; failed=1; }

# 1. The packages, from `make distdir` of the tree under test.
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$LANES_BUILDDIR/Makefile")
# A fixed directory (one run at a time), so the compiler's command lines
# (-ffile-prefix-map=DIR) repeat and ccache, when present, serves the
# objects of the previous run; the unit tests already ran in this make
# check, so nocheck. Emptied before and after: no .deb outlives its run.
pkgbuild=${LANES_PKG_BUILD_DIR:-/var/tmp/lanes-install-build}
mkdir -p "$pkgbuild"
exec 8>"$pkgbuild.lock"
flock 8
rm -rf --one-file-system "${pkgbuild:?}"/* && mkdir -p "$work/src"
make -C "$LANES_BUILDDIR" -s distdir distdir="$pkgbuild/lanes-$version" >"$work/distdir.log" 2>&1 ||
    { tail -20 "$work/distdir.log"; echo "FAIL: make distdir"; exit 1; }
# tests/pkg/deb_bookworm_test.sh builds the same packages from the same distdir
# (in a clean Debian 12 root, from Build-Depends) and shares them: when it is
# running, wait for it; take its .debs when they come from a distdir identical
# to this one, else build them here.
. "$LANES_SRCDIR/tests/pkg/deb_release.sh"
share=$LANES_BUILDDIR/tests/pkg/debs-bookworm
if [[ -e $share.lock ]]; then
    exec 7>>"$share.lock"
    flock -w 3600 7
    flock -u 7
fi
tree_hash=$(deb_release_tree_hash "$pkgbuild/lanes-$version")
shopt -s nullglob
shared=("$share"/lanes-slurm-plugins_*.deb "$share"/lanesctl_*.deb)
shopt -u nullglob
if ((${#shared[@]} == 2)) && [[ $(cat "$share/tree-hash" 2>/dev/null) == "$tree_hash" ]]; then
    cp "${shared[@]}" "$work/src/"
    ok "the .debs deb_bookworm_test built from this same distdir (tree $tree_hash), taken: $(cd "$work/src" && ls ./*.deb | tr '\n' ' ')"
else
    (cd "$pkgbuild/lanes-$version" &&
        PATH=/usr/lib/ccache:$PATH DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
            dpkg-buildpackage -us -uc -b >"$work/dpkg-buildpackage.log" 2>&1) ||
        { tail -40 "$work/dpkg-buildpackage.log"; echo "FAIL: dpkg-buildpackage -us -uc -b"; exit 1; }
    mv "$pkgbuild"/*.deb "$work/src/"
    ok "dpkg-buildpackage -us -uc -b built $(cd "$work/src" && ls ./*.deb | tr '\n' ' ')"
fi
rm -rf --one-file-system "${pkgbuild:?}"/*
flock -u 8
debs=$work/src
t_build=$(now)
shopt -s nullglob
pkgs=("$debs"/lanes-slurm-plugins_*.deb "$debs"/lanesctl_*.deb)
((${#pkgs[@]} == 2)) || { echo "FAIL: want lanes-slurm-plugins and lanesctl .debs in $debs, have: ${pkgs[*]}"; exit 1; }

lintian_out=$(lintian --fail-on error --tag-display-limit 0 "${pkgs[@]}" 2>&1)
lintian_rc=$?
printf '%s\n' "$lintian_out" | sed 's/^/  lintian: /'
if ((lintian_rc == 0)) && ! grep -q '^E: ' <<<"$lintian_out"; then ok "lintian: no errors"; else bad "lintian reports errors"; fi
dep=$(dpkg-deb -f "$debs"/lanes-slurm-plugins_*.deb Depends)
slurm_version=$(dpkg-query -W -f '${Version}' libslurm-dev 2>/dev/null | sed 's/-[^-]*$//')
if [[ $dep == *"slurm-wlm-basic-plugins (>= $slurm_version)"* && $dep == *"slurm-wlm-basic-plugins (<< "*"~)"* ]]; then
    ok "lanes-slurm-plugins depends on the Slurm release it was built with ($dep)"
else
    bad "lanes-slurm-plugins Depends does not pin Slurm $slurm_version: $dep"
fi

# 2. A clean root with Debian's Slurm; the packages installed with dpkg (their
# dependencies must be met by what Debian's Slurm brings).
root=$work/root
bash "$LANES_SRCDIR/tests/roots/make_root.sh" --runtime bookworm "$root" || { echo "FAIL: make_root.sh"; exit 1; }
t_root=$(now)
mkdir -p "$root/tmp/debs" && cp "${pkgs[@]}" "$root/tmp/debs/"
if chroot "$root" dpkg -i "/tmp/debs/${pkgs[0]##*/}" "/tmp/debs/${pkgs[1]##*/}" >"$work/dpkg-i.log" 2>&1; then
    ok "dpkg -i installs both packages into a clean Debian 12 root with Debian's Slurm"
else
    cat "$work/dpkg-i.log"
    bad "dpkg -i failed"
fi
multiarch=$(chroot "$root" dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
plugindir=/usr/lib/$multiarch/slurm-wlm
for f in "$plugindir/job_submit_lanes.so" "$plugindir/spank_lanes.so" /usr/sbin/lanesctl /usr/sbin/lanes-agent \
    /usr/libexec/lanes/lanes-policy-worker \
    /usr/share/lanes/plugstack.conf.d/lanes.conf /usr/share/man/man8/lanesctl.8.gz /usr/share/man/man8/lanes-agent.8.gz \
    /usr/share/man/man5/lanes.toml.5.gz \
    /usr/share/bash-completion/completions/lanesctl /lib/systemd/system/lanes-metrics.timer \
    /usr/share/doc/lanes-slurm-plugins/examples/lanes.toml /usr/share/doc/lanes-slurm-plugins/examples/default.lua \
    /usr/share/doc/lanes-slurm-plugins/examples/lanes.lua \
    /usr/share/lanes/grafana/lanes-dashboard.json /usr/share/lanes/prometheus/lanes-alerts.yml \
    /lib/systemd/system/lanes-metrics.service /lib/systemd/system/lanes-agent.service \
    /usr/share/doc/lanes-slurm-plugins/examples/nftables-lanes.conf \
    /usr/share/doc/lanes-slurm-plugins/examples/lanes-reapply.service \
    /usr/share/doc/lanes-slurm-plugins/examples/lanes-reapply.timer; do
    [[ -e $root$f ]] || bad "not installed: $f"
done
# What the maintainer scripts enabled (deb-systemd-helper's links; the root
# runs no systemd): the metrics timer yes, the agent no (it needs
# busy_window/busy_ceil in lanes.toml and is turned on per node).
[[ -L $root/etc/systemd/system/timers.target.wants/lanes-metrics.timer ]] &&
    ok "dpkg -i enabled lanes-metrics.timer" || bad "lanes-metrics.timer is not enabled after dpkg -i"
[[ ! -e $root/etc/systemd/system/multi-user.target.wants/lanes-agent.service ]] &&
    ok "dpkg -i left lanes-agent.service disabled" || bad "dpkg -i enabled lanes-agent.service"
# Installing arms nothing: the line is shipped where plugstack.conf does not
# look, and postinst says how to turn it on.
grep -q '^required spank_lanes.so config=/etc/slurm/lanes.toml' "$root/usr/share/lanes/plugstack.conf.d/lanes.conf" &&
    [[ ! -e $root/etc/slurm/plugstack.conf.d/lanes.conf ]] &&
    ok "the plugstack line is shipped inactive in /usr/share/lanes/plugstack.conf.d" ||
    bad "the plugstack line is missing or active after dpkg -i"
grep -q 'ln -s /usr/share/lanes/plugstack.conf.d/lanes.conf' "$work/dpkg-i.log" &&
    ok "postinst prints the next steps" || { cat "$work/dpkg-i.log"; bad "postinst printed no next steps"; }
# The examples as installed (lanes.toml names lanes.lua next to it).
env -u LANES_POLICY_WORKER chroot "$root" lanesctl --config /usr/share/doc/lanes-slurm-plugins/examples/lanes.toml check >"$work/check.log" 2>&1 &&
    ok "installed lanesctl checks the installed example lanes.toml and policy as they are" ||
    { cat "$work/check.log"; bad "lanesctl check of the installed example"; }

# 3. The e2e tests inside the root, on the installed files only: the scripts
# are copied in, nothing of the build tree is.
mkdir -p "$root/opt/lanes/tests"
cp -r "$LANES_SRCDIR/tests/cluster" "$LANES_SRCDIR/tests/e2e" "$root/opt/lanes/tests/"
mkdir -p "$root/opt/lanes/tests/pkg" && cp "$LANES_SRCDIR/tests/pkg/readme_debian.sh" "$root/opt/lanes/tests/pkg/"
run_in_root() {  # run_in_root NAME ENV... -- SCRIPT: one e2e script in the root
    local name=$1
    shift
    local -a envv=()
    while [[ $1 != -- ]]; do envv+=("$1"); shift; done
    shift
    local t=$(now)
    # A private mount namespace: /proc, /sys, /dev and a fresh /run for the
    # root vanish with it, whatever happens.
    unshare --mount --propagation private -- /bin/sh -c '
        root=$1; shift
        # The root must be a mount point: `ip netns add` makes / a slave mount.
        mount --bind "$root" "$root" &&
        mount -t proc proc "$root/proc" && mount --rbind /sys "$root/sys" && mount --rbind /dev "$root/dev" &&
            mount -t tmpfs -o mode=0755 tmpfs "$root/run" && mkdir -p "$root/run/lock" || exit 1
        exec chroot "$root" "$@"' sh "$root" \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TZ=UTC \
        LANES_SRCDIR=/opt/lanes TMPDIR=/tmp \
        E2E_JOB_SUBMIT_SO="$plugindir/job_submit_lanes.so" E2E_SPANK_SO="$plugindir/spank_lanes.so" \
        E2E_LANESCTL=/usr/sbin/lanesctl "${envv[@]}" bash "/opt/lanes/tests/$1" >"$work/$name.log" 2>&1
    local rc=$?
    grep -E '^(ok|FAIL):' "$work/$name.log" | sed "s/^/  $name: /"
    if ((rc == 0)); then ok "$name passes in the root on the installed files ($(( $(now) - t )) s)"
    else tail -60 "$work/$name.log"; bad "$name failed in the root (exit $rc)"; fi
}
# README.Debian first (it needs the root as dpkg left it), then
# job_submit_test.sh with the plugins named by path, and spank_test.sh with
# spank_lanes loaded through the plugstack.conf.d link README.Debian made.
run_in_root readme_debian -- pkg/readme_debian.sh
for script in ${LANES_INSTALL_E2E:-job_submit_test.sh}; do
    run_in_root "${script%.sh}" -- "e2e/$script"
done
run_in_root spank_test-via-plugstack.conf.d E2E_INSTALLED_PLUGSTACK=1 -- e2e/spank_test.sh
t_end=$(now)
echo "times: packages $((t_build - t0)) s, root $((t_root - t_build)) s, install and e2e $((t_end - t_root)) s, total $((t_end - t0)) s"
((failed)) && exit 1
exit 0
