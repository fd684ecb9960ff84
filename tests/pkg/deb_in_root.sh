#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/deb_in_root.sh: runs INSIDE a clean Debian root made by
# tests/roots/make_root.sh --runtime (tests/pkg/deb_release.sh enters it).
#
#   deb_in_root.sh build VERSION SLURM_MAJOR.MINOR
#       /lanes/lanes-VERSION (make distdir's tree): install its Build-Depends
#       and nothing else (apt-get build-dep ./, which adds build-essential),
#       dpkg-buildpackage -us -uc -b, lintian from this release, and check that
#       lanes-slurm-plugins depends on exactly this root's Slurm. The .debs go
#       to /lanes/out.
#   deb_in_root.sh install UNITDIR
#       apt-get install /lanes/debs/*.deb (apt brings what they depend on from
#       this release), check the files and that postinst printed the next
#       steps, then tests/pkg/readme_debian.sh (/opt/lanes/tests).
# Prints "ok:"/"FAIL:" lines; exit 0 when all passed.
set -uo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
export DEBIAN_FRONTEND=noninteractive
failed=0
ok() { printf 'ok: %s\n' "$*"; }
bad() { printf 'FAIL: %s\n' "$*"; failed=1; }
say() { printf 'deb_in_root: %s\n' "$*"; }
t0=$(date +%s)
since() { echo "$(($(date +%s) - t0)) s"; }
release=$(. /etc/os-release && echo "${PRETTY_NAME}")
# Maintainer scripts of Slurm and munge must not start daemons here.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
# The network: apt gives up a connection idle for 60 s (3 retries), and each
# call after a bound, so a stalled mirror fails this test, not the run.
apt_get() {  # SECONDS ARGS...
    local limit=$1
    shift
    timeout --foreground -k 30 "$limit" apt-get -o Acquire::http::Timeout=60 -o Acquire::Retries=3 "$@"
}
apt_update() {
    apt_get 600 update -qq >/tmp/apt-update.log 2>&1 || { cat /tmp/apt-update.log; say "FAIL: apt-get update"; exit 1; }
}

case ${1:-} in
build)
    version=${2:?version} want=${3:?Slurm major.minor}
    cd "/lanes/lanes-$version" || exit 1
    apt_update
    # Only what debian/control asks for (and build-essential, implied).
    if apt_get 1200 build-dep -y -qq ./ >/lanes/build-dep.log 2>&1; then
        ok "$release: apt-get build-dep ./ installed debian/control's Build-Depends ($(since))"
    else
        tail -30 /lanes/build-dep.log
        say "FAIL: apt-get build-dep ./ on $release"
        exit 1
    fi
    # contrib/install-deps.sh (everything the tests need, for a developer on
    # this release): every package it asks for resolves here. Simulated: the
    # real thing downloads about 1 GB (clang, QEMU, MariaDB, Prometheus).
    if sim=$(apt-get install -s --no-install-recommends $(bash contrib/install-deps.sh --list) 2>&1); then
        ok "$release: contrib/install-deps.sh's $(bash contrib/install-deps.sh --list | wc -l) packages resolve (apt-get install --simulate)"
    else
        grep -E '^E:|^ ' <<<"$sim" | head -20
        bad "$release: contrib/install-deps.sh asks for packages this release does not have"
    fi
    slurm=$(dpkg-query -W -f '${Version}' libslurm-dev | sed 's/-[^-]*$//')
    [[ ${slurm%.*} == "$want" ]] || { say "FAIL: $release has Slurm $slurm, the test is for $want"; exit 1; }
    # ccache only makes a repeated build quick (it is no build dependency: the
    # build's result is the same without it); lintian checks the result.
    apt_get 900 install -y -qq --no-install-recommends ccache lintian >/lanes/tools.log 2>&1 ||
        { tail -20 /lanes/tools.log; say "FAIL: cannot install ccache and lintian"; exit 1; }
    export CCACHE_DIR=/lanes/ccache
    opts="parallel=$(nproc)"
    [[ ${LANES_DEB_CHECK:-0} == 1 ]] || opts+=" nocheck"
    t=$(date +%s)
    if PATH=/usr/lib/ccache:$PATH DEB_BUILD_OPTIONS=$opts dpkg-buildpackage -us -uc -b >/lanes/dpkg-buildpackage.log 2>&1; then
        ok "$release: dpkg-buildpackage -us -uc -b with Slurm $slurm in $(($(date +%s) - t)) s (DEB_BUILD_OPTIONS=$opts)"
    else
        grep -E -B2 -A6 'error:|Error|dh_[a-z_]+: ' /lanes/dpkg-buildpackage.log | tail -60
        say "FAIL: dpkg-buildpackage on $release"
        exit 1
    fi
    mkdir -p /lanes/out && mv /lanes/*.deb /lanes/out/
    debs=(/lanes/out/lanes-slurm-plugins_*.deb /lanes/out/lanesctl_*.deb)
    lintian_out=$(lintian --fail-on error,warning --display-info --tag-display-limit 0 "${debs[@]}" 2>&1)
    lintian_rc=$?
    printf '%s\n' "$lintian_out" | sed "s/^/  lintian ($(lintian --version)): /"
    ((lintian_rc == 0)) && ok "$release: lintian reports no errors and no warnings" ||
        bad "$release: lintian reports errors or warnings"
    next=$(awk -F. '{ printf "%s.%s.%d", $1, $2, $3 + 1 }' <<<"$slurm")
    dep=$(dpkg-deb -f "${debs[0]}" Depends)
    [[ $dep == *"slurm-wlm-basic-plugins (>= $slurm)"* && $dep == *"slurm-wlm-basic-plugins (<< $next~)"* ]] &&
        ok "$release: lanes-slurm-plugins depends on exactly Slurm $slurm ($dep)" ||
        bad "$release: lanes-slurm-plugins does not pin Slurm $slurm: $dep"
    ;;
install)
    unitdir=${2:?unit dir}
    apt_update
    if apt_get 900 install -y --no-install-recommends /lanes/debs/lanes-slurm-plugins_*.deb /lanes/debs/lanesctl_*.deb \
        >/lanes/install.log 2>&1; then
        ok "$release: apt-get install of both .debs with this release's Slurm ($(since))"
    else
        tail -30 /lanes/install.log
        say "FAIL: apt-get install on $release"
        exit 1
    fi
    grep -q 'ln -s /usr/share/lanes/plugstack.conf.d/lanes.conf /etc/slurm/plugstack.conf.d/' /lanes/install.log &&
        ok "postinst printed the next steps" || { cat /lanes/install.log; bad "postinst did not print the next steps"; }
    multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
    for f in "/usr/lib/$multiarch/slurm-wlm/job_submit_lanes.so" "/usr/lib/$multiarch/slurm-wlm/spank_lanes.so" \
        /usr/sbin/lanesctl /usr/share/lanes/plugstack.conf.d/lanes.conf \
        /usr/share/doc/lanes-slurm-plugins/examples/lanes.toml /usr/share/doc/lanes-slurm-plugins/examples/lanes.lua \
        /usr/share/bash-completion/completions/lanesctl \
        "$unitdir/lanes-metrics.timer" "$unitdir/lanes-metrics.service" "$unitdir/lanes-agent.service"; do
        [[ -e $f ]] || bad "$release: not installed: $f"
    done
    ok "$release: units in $unitdir: $(dpkg -L lanesctl | grep -c "^$unitdir/lanes-")"
    lanesctl --config /usr/share/doc/lanes-slurm-plugins/examples/lanes.toml check >/tmp/check.log 2>&1 &&
        ok "$release: the example lanes.toml passes lanesctl check as installed" ||
        { cat /tmp/check.log; bad "$release: lanesctl check of the installed example"; }
    LANES_SRCDIR=/opt/lanes bash /opt/lanes/tests/pkg/readme_debian.sh 2>&1 | sed 's/^/  /'
    ((PIPESTATUS[0] == 0)) && ok "$release: README.Debian's steps give a node that runs shaped jobs" ||
        bad "$release: README.Debian's steps (tests/pkg/readme_debian.sh)"
    ;;
*)
    sed -n '5,16s/^# \{0,1\}//p' "$0" >&2
    exit 2
    ;;
esac
((failed)) && exit 1
exit 0
