#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# configure fails clearly when a dependency is missing: for each one, hide it
# (its pkg-config file, or the Slurm prefix) and check that configure stops
# with a message naming the Debian package to install.
set -uo pipefail
src=${LANES_SRCDIR:?run through make check}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lanes-configure.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
pc_dirs=$(pkg-config --variable pc_path pkg-config)

# One full configure fills a cache of the checks that do not depend on what is
# hidden (compiler, libtool, hardening flags): each run below starts from a
# copy of it, so it only runs the dependency checks (a cache is only saved by
# a configure that succeeds). Whatever names a dependency is left out: the
# pkg-config results, Lanes' own Slurm checks, Slurm's headers, and the
# precious variables (a changed PKG_CONFIG_LIBDIR would be refused as such).
(cd "$tmp" && mkdir seed && cd seed && "$src/configure" -q -C >/dev/null 2>&1) ||
    { echo "FAIL: configure with every dependency present failed (see a plain configure)"; exit 1; }
grep -vE '^(pkg_cv_|lanes_cv_|ac_cv_env_|ac_cv_header_slurm)' "$tmp/seed/config.cache" >"$tmp/generic.cache"
rm -rf "$tmp/seed"

# A pkg-config search dir with every .pc file except those matching $1.
pc_without() {
    local dir=$tmp/pc-$2 d f
    mkdir -p "$dir"
    for d in ${pc_dirs//:/ }; do
        [[ -d $d ]] || continue
        for f in "$d"/*.pc; do
            [[ -e $f ]] || continue
            [[ $(basename "$f") =~ $1 ]] && continue
            ln -sf "$f" "$dir/"
        done
    done
    printf '%s\n' "$dir"
}

expect_failure() {  # NAME PACKAGE ENV... -- CONFIGURE-ARGS...
    local name=$1 package=$2
    shift 2
    local -a env=()
    while [[ $1 != -- ]]; do env+=("$1"); shift; done
    shift
    local build=$tmp/build-$name out
    mkdir -p "$build"
    cp "$tmp/generic.cache" "$build/config.cache"
    if out=$(cd "$build" && env "${env[@]}" "$src/configure" -q --cache-file=config.cache "$@" 2>&1); then
        echo "FAIL: configure succeeded without $name"
        status=1
    elif grep -q "apt-get install $package" <<<"$out"; then
        echo "ok: without $name: $(grep -m1 'error:' <<<"$out")"
    else
        echo "FAIL: without $name the message does not name $package:"
        tail -3 <<<"$out"
        status=1
    fi
}

expect_failure slurm libslurm-dev DUMMY=1 -- --with-slurm="$tmp/no-slurm"
expect_failure lua liblua5.4-dev "PKG_CONFIG_LIBDIR=$(pc_without '^lua' lua)" --
expect_failure tomlplusplus libtomlplusplus-dev "PKG_CONFIG_LIBDIR=$(pc_without '^tomlplusplus' toml)" --
expect_failure libnl libnl-3-dev "PKG_CONFIG_LIBDIR=$(pc_without '^libnl-3' nl)" --
expect_failure libnftables libnftables-dev "PKG_CONFIG_LIBDIR=$(pc_without '^libnftables' nft)" --
expect_failure libcurl libcurl4-openssl-dev "PKG_CONFIG_LIBDIR=$(pc_without '^libcurl' curl)" --
expect_failure nlohmann-json nlohmann-json3-dev "PKG_CONFIG_LIBDIR=$(pc_without '^nlohmann' json)" --
expect_failure googletest libgtest-dev "PKG_CONFIG_LIBDIR=$(pc_without '^(gtest|gmock)' gtest)" --
exit $status
