#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The RPM spec: `make dist`'s tarball builds with `rpmbuild -ta` (Debian's rpm,
# against Debian's Slurm headers; --nodeps since the EL package names of the
# build dependencies do not exist here), and the RPMs hold the expected files
# and require the Slurm release the headers are from.
set -uo pipefail
: "${LANES_SRCDIR:?run through make check}" "${LANES_BUILDDIR:?run through make check}"
command -v rpmbuild >/dev/null || { echo "FAIL: rpmbuild missing (apt-get install rpm)"; exit 1; }
t0=$(date +%s)
# A fixed top dir (one run at a time), so compiler command lines repeat and
# ccache, when present, serves the objects of the previous run.
top=${LANES_RPM_TOPDIR:-/var/tmp/lanes-rpm-test}
mkdir -p "$top"
exec 8>"$top.lock"
flock 8
rm -rf --one-file-system "${top:?}"/*
mkdir -p "$top/SOURCES"
failed=0
bad() { printf 'FAIL: %s\n' "$*"; failed=1; }

# BuildRequires: every library configure requires (its PKG_CHECK_MODULES
# that fail the build when missing) has its EL -devel package in the spec.
# A module missing from this map fails too: add it here and to the spec.
declare -A el_devel=([gtest_main]=gtest-devel [libcurl]=libcurl-devel [libnl-3.0]=libnl3-devel [lua5.4]=lua-devel
    [libnftables]=nftables-devel [nlohmann_json]=json-devel [tomlplusplus]=tomlplusplus-devel)
brs=$(sed -n 's/^BuildRequires: *//p' "$LANES_SRCDIR/contrib/lanes.spec.in" | tr ' ' '\n')
nmods=0
while read -r module; do
    ((nmods++))
    want=${el_devel[$module]:-}
    if [[ -z $want ]]; then bad "configure requires pkg-config module $module: map it to its EL package here and in the spec"
    elif ! grep -qx "$want" <<<"$brs"; then bad "contrib/lanes.spec.in lacks BuildRequires: $want (configure requires $module)"; fi
done < <(cat "$LANES_SRCDIR"/configure.ac "$LANES_SRCDIR"/m4/x_ac_*.m4 | tr '\n' ' ' |
    grep -o 'PKG_CHECK_MODULES(\[[A-Z_0-9]*\], *\[[^] ]*[^]]*\], *\[[^]]*\], *\[[^]]*AC_MSG_ERROR' |
    sed 's/^PKG_CHECK_MODULES(\[[A-Z_0-9]*\], *\[\([^] ]*\).*/\1/')
((nmods >= 5)) || bad "found only $nmods required pkg-config modules in configure (the pattern broke?)"

make -C "$LANES_BUILDDIR" -s dist >"$top/dist.log" 2>&1 || true
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$LANES_BUILDDIR/Makefile")
tarball=$LANES_BUILDDIR/lanes-$version.tar.xz
[[ -s $tarball ]] || tarball=""
[[ -n $tarball ]] || { tail -20 "$top/dist.log"; echo "FAIL: make dist made no tarball"; exit 1; }
listing=$(tar -tJf "$tarball")
grep -q '/contrib/lanes.spec$' <<<"$listing" || bad "the tarball has no contrib/lanes.spec"
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$LANES_BUILDDIR/Makefile")
mv "$tarball" "$top/SOURCES/lanes-$version.tar.xz"

# optflags -O1 -g0 (rpm's default: -O2 -g): the compiler here is the host
# tree's, which already builds every file at -O2; what this test checks is the
# spec (its %configure, %install and file lists, the Requires), and compiling
# is most of its time.
PATH=/usr/lib/ccache:$PATH rpmbuild -ta --nodeps --without check \
    --define "_topdir $top" --define 'debug_package %{nil}' --define "_smp_mflags -j$(nproc)" \
    --define 'optflags -O1 -g0' \
    "$top/SOURCES/lanes-$version.tar.xz" >"$top/rpmbuild.log" 2>&1 ||
    { tail -40 "$top/rpmbuild.log"; echo "FAIL: rpmbuild -ta"; exit 1; }
shopt -s nullglob
plugins=("$top"/RPMS/*/lanes-slurm-plugins-"$version"-*.rpm)
ctl=("$top"/RPMS/*/lanesctl-"$version"-*.rpm)
((${#plugins[@]} == 1 && ${#ctl[@]} == 1)) || { ls -R "$top/RPMS"; echo "FAIL: want one lanes-slurm-plugins and one lanesctl RPM"; exit 1; }
echo "built: $(basename "${plugins[0]}") $(basename "${ctl[0]}")"

files=$(rpm -qlp "${plugins[0]}" 2>/dev/null)
for want in '/slurm/job_submit_lanes.so$' '/slurm/spank_lanes.so$' '^/usr/share/lanes/plugstack.conf.d/lanes.conf$' \
    '/man8/job_submit_lanes.8' '/man8/spank_lanes.8' '/man5/lanes.toml.5' '/man7/lanes-policy.7' \
    '/examples/lanes.toml$' '/examples/default.lua$' '/examples/lanes.lua$' '/examples/nftables-lanes.conf$' \
    '/examples/lanes-reapply.service$' '/examples/lanes-reapply.timer$' '/LICENSE$'; do
    grep -Eq "$want" <<<"$files" || bad "lanes-slurm-plugins lacks $want"
done
grep -q '\.la$' <<<"$files" && bad "lanes-slurm-plugins ships libtool .la files"
files=$(rpm -qlp "${ctl[0]}" 2>/dev/null)
for want in '/sbin/lanesctl$' '/sbin/lanes-agent$' '/man8/lanesctl.8' '/man8/lanes-agent.8' '/bash-completion/completions/lanesctl$' \
    '/systemd/system/lanes-metrics.timer$' '/systemd/system/lanes-metrics.service$' '/systemd/system/lanes-agent.service$' \
    '/lanes/grafana/lanes-dashboard.json$' '/lanes/prometheus/lanes-alerts.yml$'; do
    grep -Eq "$want" <<<"$files" || bad "lanesctl lacks $want"
done
# Installing must not arm spank_lanes: nothing in plugstack.conf.d.
rpm -qlp "${plugins[0]}" 2>/dev/null | grep -v '^/usr/share/lanes/' | grep -q '/plugstack.conf.d/' &&
    bad "lanes-slurm-plugins installs into an active plugstack.conf.d"
num=$(awk '/define SLURM_VERSION_NUMBER/ { print $3 }' /usr/include/slurm/slurm_version.h)
slurm=$(printf '%d.%02d.%d' $((num >> 16 & 255)) $((num >> 8 & 255)) $((num & 255)))
requires=$(rpm -qRp "${plugins[0]}" 2>/dev/null)
grep -Eq "^slurm(\\(x86-64\\))? = $slurm\$" <<<"$requires" ||
    bad "lanes-slurm-plugins does not require slurm = $slurm: $(tr '\n' ' ' <<<"$requires")"
[[ ${plugins[0]} == *"-1.slurm$slurm"* ]] || bad "the release does not name Slurm $slurm: ${plugins[0]}"
rm -rf --one-file-system "${top:?}"/*
((failed)) && exit 1
echo "ok: RPMs built from make dist's tarball in $(($(date +%s) - t0)) s, with the expected files and Requires: slurm = $slurm"
