# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# tests/pkg/deb_release.sh: the Debian packages of one Debian release, as a
# site builds and installs them there.
#
#   source tests/pkg/deb_release.sh
#   deb_release_run SUITE MAJOR.MINOR UNITDIR   # e.g. trixie 24.11 /usr/lib/systemd/system
#
# As root:
#   1. `make distdir` of the tree under test (what the release tarball holds);
#   2. a clean root of SUITE with Debian's Slurm and nothing of Lanes' build
#      (tests/roots/make_root.sh --runtime, the root builder the Slurm-version
#      and install tests use, cached under $LANES_CACHE_DIR with its .debs);
#      inside it (tests/pkg/deb_in_root.sh build): `apt-get build-dep ./`,
#      dpkg-buildpackage, that release's lintian (no errors, no warnings), the
#      Slurm pin in Depends;
#   3. a second clean root of SUITE (unpacked from the same cache): apt-get
#      install of the .debs, the files in their places (units in UNITDIR),
#      postinst's next steps, and tests/pkg/readme_debian.sh: a job runs with
#      Lanes installed but not turned on, then README.Debian's commands run
#      verbatim and a job runs shaped.
# Roots are entered as tests/slurm_versions does (slurm_versions__enter: new
# mount, PID and UTS namespaces, private /run and /tmp); the scratch dir under
# ${TMPDIR:-/var/tmp} is removed at the end (kept with LANES_KEEP_ROOT=1).
# LANES_DEB_CHECK=1 also runs the unit tests inside dpkg-buildpackage (the
# Slurm-version tests already run them on each release).

deb_release__say() { printf 'deb_release: %s\n' "$*"; }

# deb_release_tree_hash DIR: a hash of every file under DIR (a distdir), so
# that packages built from one distdir are known to match another.
deb_release_tree_hash() {
    (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}

deb_release_run() {
    local suite=$1 want=$2 unitdir=$3
    local src=${LANES_SRCDIR:?run through make check} build=${LANES_BUILDDIR:?run through make check}
    local cache=${LANES_CACHE_DIR:-/var/cache/lanes}
    local t0 t version scratch rc failed=0
    t0=$(date +%s)
    # shellcheck source=../slurm_versions/slurm_versions.sh
    source "$src/tests/slurm_versions/slurm_versions.sh"
    scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/lanes-deb-$suite.XXXXXX") || return 1
    DEB_RELEASE_PID=""
    # shellcheck disable=SC2064 # expand now: the trap must remove this dir
    trap "deb_release__stop; slurm_versions__cleanup '$scratch'" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    version=$(sed -n 's/^PACKAGE_VERSION = //p' "$build/Makefile")
    make -C "$build" -s distdir distdir="$scratch/lanes-$version" >"$scratch/distdir.log" 2>&1 ||
        { tail -20 "$scratch/distdir.log"; deb_release__say "FAIL: make distdir"; return 1; }
    local tree_hash
    tree_hash=$(deb_release_tree_hash "$scratch/lanes-$version")
    export LANES_TAG_PREFIX=d$$-

    # 2. Build in a clean root from the Build-Depends.
    t=$(date +%s)
    bash "$src/tests/roots/make_root.sh" --runtime "$suite" "$scratch/build" ||
        { deb_release__say "FAIL: cannot make the $suite root"; return 1; }
    mkdir -p "$scratch/build/lanes" "$scratch/build/var/cache/apt/archives" &&
        mv "$scratch/lanes-$version" "$scratch/build/lanes/" &&
        cp "$src/tests/pkg/deb_in_root.sh" "$scratch/build/lanes/" &&
        cp -L /etc/resolv.conf "$scratch/build/etc/resolv.conf" || return 1
    # The suite's .debs downloaded before (make_root.sh's cache) go in first,
    # and what apt downloads comes back out for the next run.
    find "$cache/debs/$suite" -maxdepth 1 -name '*.deb' -exec cp -t "$scratch/build/var/cache/apt/archives/" {} + 2>/dev/null
    export CCACHE_HOST_DIR=$cache/ccache/deb-$suite
    mkdir -p "$CCACHE_HOST_DIR"
    deb_release__say "$suite build root ready in $(($(date +%s) - t)) s"
    slurm_versions__enter "$scratch/build" /bin/bash /lanes/deb_in_root.sh build "$version" "$want" &
    DEB_RELEASE_PID=$!
    wait "$DEB_RELEASE_PID"
    rc=$?
    DEB_RELEASE_PID=""
    find "$scratch/build/var/cache/apt/archives" -maxdepth 1 -name '*.deb' -exec cp -n -t "$cache/debs/$suite/" {} + 2>/dev/null
    local t_build=$(($(date +%s) - t))
    deb_release__say "$suite: build root, Build-Depends, dpkg-buildpackage and lintian: exit $rc after $t_build s"
    shopt -s nullglob
    local debs=("$scratch"/build/lanes/out/lanes-slurm-plugins_*.deb "$scratch"/build/lanes/out/lanesctl_*.deb)
    shopt -u nullglob
    ((rc == 0)) || failed=1
    ((${#debs[@]} == 2)) || { deb_release__say "FAIL: no .debs were built on $suite"; return 1; }
    # DEB_RELEASE_SHARE_DIR: the packages, and the hash of the distdir they
    # were built from, for another test of the same tree to install
    # (tests/pkg/install_test.sh) instead of building them again.
    if [[ -n ${DEB_RELEASE_SHARE_DIR:-} ]] && ((rc == 0)); then
        mkdir -p "$DEB_RELEASE_SHARE_DIR" && cp "${debs[@]}" "$DEB_RELEASE_SHARE_DIR/" &&
            echo "$tree_hash" >"$DEB_RELEASE_SHARE_DIR/tree-hash" &&
            deb_release__say "$suite: the .debs shared in $DEB_RELEASE_SHARE_DIR (tree $tree_hash)"
    fi

    # 3. Install into another clean root and follow README.Debian.
    t=$(date +%s)
    bash "$src/tests/roots/make_root.sh" --runtime "$suite" "$scratch/node" ||
        { deb_release__say "FAIL: cannot make the second $suite root"; return 1; }
    mkdir -p "$scratch/node/lanes/debs" "$scratch/node/opt/lanes/tests/pkg" "$scratch/node/var/cache/apt/archives" &&
        cp "${debs[@]}" "$scratch/node/lanes/debs/" &&
        cp "$src/tests/pkg/deb_in_root.sh" "$scratch/node/lanes/" &&
        cp -r "$src/tests/cluster" "$scratch/node/opt/lanes/tests/" &&
        cp "$src/tests/pkg/readme_debian.sh" "$scratch/node/opt/lanes/tests/pkg/" &&
        cp -L /etc/resolv.conf "$scratch/node/etc/resolv.conf" || return 1
    rm -rf --one-file-system "$scratch/build"
    find "$cache/debs/$suite" -maxdepth 1 -name '*.deb' -exec cp -t "$scratch/node/var/cache/apt/archives/" {} + 2>/dev/null
    slurm_versions__enter "$scratch/node" /bin/bash /lanes/deb_in_root.sh install "$unitdir" &
    DEB_RELEASE_PID=$!
    wait "$DEB_RELEASE_PID"
    rc=$?
    DEB_RELEASE_PID=""
    deb_release__say "$suite: install and README.Debian: exit $rc after $(($(date +%s) - t)) s"
    ((rc == 0)) || failed=1
    deb_release__say "$suite: total $(($(date +%s) - t0)) s (build $t_build s)"
    return $failed
}

deb_release__stop() {
    local pid=${DEB_RELEASE_PID:-}
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
    deb_release__say "stopping the run in the root (unshare $pid)"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 0
}
