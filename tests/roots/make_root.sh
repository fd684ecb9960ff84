#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/roots/make_root.sh: a Debian root filesystem with Slurm and everything
# Lanes needs to build and test, made with mmdebstrap and cached.
#
#   tests/roots/make_root.sh [--runtime] SUITE DEST   # SUITE: bookworm, trixie or sid
#   tests/roots/make_root.sh [--runtime] --key SUITE  # print the cache key and exit
#   tests/roots/make_root.sh [--runtime] --packages   # print the package list and exit
#
# DEST must not exist or be an empty directory; it receives a fresh copy of the
# root (a throw-away: change it freely). Slurm in the root: bookworm 22.05,
# trixie 24.11, sid whatever unstable has (26.05 when this was written).
#
# Two kinds of root, one recipe:
# - the build root (default; tests/slurm_versions): Slurm (slurmctld slurmd
#   slurm-client munge libslurm-dev slurm-wlm-basic-plugins-dev) and the build
#   and test dependencies listed by contrib/install-deps.sh (less what only the
#   host needs), plus $LANES_ROOT_EXTRA_PACKAGES (space separated; a VM image
#   adds its kernel here);
# - the runtime root (--runtime; tests/pkg/install_test.sh): a site's node as
#   Debian's Slurm packages make it, with the tools the real-cluster tests use
#   and the shared libraries Lanes' .debs depend on, but no build tools and
#   nothing of Lanes; from the suite, its -updates and its security archive
#   (for a stable suite), so the host's .debs find the libraries they were
#   built against.
# Recommends are not installed.
#
# Cache ($LANES_CACHE_DIR, default /var/cache/lanes), kept across runs:
#   debs/SUITE/*.deb          every .deb downloaded for SUITE; later builds
#                             copy them in, so apt downloads only what changed
#   roots/SUITE-KEY.tar.zst   the finished root; KEY hashes the suite, the
#                             mirror, the package list and $recipe (bumped when
#                             the way roots are made changes), so a changed
#                             list builds a new root (older ones of the suite
#                             are removed)
# A second run with the same KEY only unpacks the tarball. sid moves daily:
# LANES_ROOT_REFRESH=1 rebuilds even when a cached root exists. Concurrent runs
# for one suite wait for each other (flock), so a root is built once.
#
# Mirror: $LANES_DEBIAN_MIRROR, else the first Debian URI in this machine's apt
# sources. bookworm, trixie and sid are all signed by keys in Debian 12's
# debian-archive-keyring. Valid-Until is not checked: sid's Release file
# expires within days, and a mirror frozen at a date (a snapshot) still serves it. Needs root (mmdebstrap --mode=root), mmdebstrap and
# zstd (contrib/install-deps.sh installs both).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)

say() { printf 'make_root: %s\n' "$*" >&2; }
die() { printf 'make_root: ERROR: %s\n' "$*" >&2; exit 1; }

usage() {
    sed -n '2,9s/^# \{0,1\}//p' "$0" >&2
    exit 2
}

# What only the host needs (packaging, monitoring, making roots, plotting, the
# sanitizer and fuzzer toolchain, which is pinned to bookworm's clang) stays
# out of a root: it builds and tests Lanes, nothing more (accounting, MariaDB and
# slurmdbd, only tests/e2e/accounts_test.sh needs, on the host). Shell patterns.
host_only=(dpkg-dev debhelper dh-autoreconf fakeroot lintian rpm bash-completion
    prometheus prometheus-node-exporter mmdebstrap zstd gnuplot-nox clang-format
    mariadb-server slurmdbd
    'clang-[0-9]*' 'libclang-rt-[0-9]*' 'llvm-[0-9]*')

# The runtime root's packages (see the top).
runtime_packages=(
    # Slurm and munge, as a site installs them
    slurmctld slurmd slurm-client munge
    # what the cluster harness and the e2e tests run
    iproute2 nftables iperf3 tcpdump python3 procps util-linux passwd hostname iputils-ping
)
# Lanes' shared libraries (what the .debs' shlibs Depends name) on bookworm,
# where tests/pkg/install_test.sh installs the host's .debs with dpkg -i. Their
# names change between releases (t64, Slurm's soname): on the other suites the
# package tests install with apt, which brings what the .debs depend on.
runtime_libs_bookworm=(liblua5.4-0 libtomlplusplus3 libnl-3-200 libnl-route-3-200 libnftables1 libslurm38 libcurl4)
flavor=build

root_packages() {  # root_packages [SUITE]
    if [[ $flavor == runtime ]]; then
        {
            printf '%s\n' "${runtime_packages[@]}"
            [[ ${1:-bookworm} != bookworm ]] || printf '%s\n' "${runtime_libs_bookworm[@]}"
        } | sort -u
        return
    fi
    local -a pkgs=()
    local p pattern
    while read -r p; do
        [[ -n $p ]] || continue
        for pattern in "${host_only[@]}"; do
            # shellcheck disable=SC2053 # a pattern on purpose
            [[ $p == $pattern ]] && continue 2
        done
        pkgs+=("$p")
    done < <(bash "$src/contrib/install-deps.sh" --list)
    ((${#pkgs[@]})) || die "contrib/install-deps.sh --list printed nothing"
    # shellcheck disable=SC2206 # word splitting is the point
    # What minbase lacks and the tests use (useradd, hostname, ping), and ccache
    # so rebuilding Lanes in a cached root is quick.
    pkgs+=(passwd hostname iputils-ping ccache ${LANES_ROOT_EXTRA_PACKAGES:-})
    printf '%s\n' "${pkgs[@]}" | sort -u
}

default_mirror() {
    local m=${LANES_DEBIAN_MIRROR:-}
    if [[ -z $m ]]; then
        # deb822 (URIs:) or one-line (deb URI suite ...) sources; the first
        # Debian archive wins (not the security archive).
        m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
            awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }')
    fi
    if [[ -z $m ]]; then
        m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
            awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i !~ /security/) { print $i; exit } }')
    fi
    [[ -n $m ]] || die "no Debian mirror in this machine's apt sources; set LANES_DEBIAN_MIRROR"
    printf '%s\n' "${m%/}"
}

# Bump when the way a root is made changes (the mmdebstrap call, the hooks).
recipe=1

# The apt sources of a root: the suite; for the runtime root of a stable suite
# also its -updates and security archives.
root_sources() {
    local suite=$1 mirror=$2
    printf 'deb %s %s main\n' "$mirror" "$suite"
    if [[ $flavor == runtime && $suite != sid && $suite != unstable ]]; then
        local security=${LANES_DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security}
        printf 'deb %s %s-updates main\n' "$mirror" "$suite"
        printf 'deb %s %s-security main\n' "$security" "$suite"
    fi
}

cache_key() {
    local suite=$1 mirror=$2
    {
        printf 'recipe=%s\nsuite=%s\nmirror=%s\n' "$recipe" "$suite" "$mirror"
        # The build root's key is unchanged by the runtime kind's addition.
        [[ $flavor == build ]] || root_sources "$suite" "$mirror"
        root_packages "$suite"
    } | sha256sum | cut -c1-16
}

if [[ ${1:-} == --runtime ]]; then
    flavor=runtime
    shift
fi
case ${1:-} in
    --packages) root_packages; exit 0 ;;
    --key) [[ $# == 2 ]] || usage; cache_key "$2" "$(default_mirror)"; exit 0 ;;
    -h | --help | "") usage ;;
esac
[[ $# == 2 ]] || usage
suite=$1 dest=$2
case $suite in
    bookworm | trixie | sid | forky | testing | unstable | stable) ;;
    *) die "unknown suite '$suite' (bookworm, trixie or sid)" ;;
esac
((EUID == 0)) || die "needs root (mmdebstrap --mode=root, device nodes, file owners)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (apt-get install mmdebstrap)"
command -v zstd >/dev/null || die "zstd is missing (apt-get install zstd)"
if [[ -e $dest ]] && [[ -n $(ls -A "$dest" 2>/dev/null) ]]; then
    die "$dest exists and is not empty"
fi

cache=${LANES_CACHE_DIR:-/var/cache/lanes}
mirror=$(default_mirror)
key=$(cache_key "$suite" "$mirror")
debs=$cache/debs/$suite
# name: the cache file's prefix; older roots of the same name are removed.
name=$suite
[[ $flavor == build ]] || name=$flavor-$suite
tarball=$cache/roots/$name-$key.tar.zst
mkdir -p "$debs" "$cache/roots"

exec 9>"$cache/roots/$name.lock"
flock 9

t0=$(date +%s%N)
secs() { local t=$(( ($(date +%s%N) - t0) / 1000000 )); printf '%d.%01d' $((t / 1000)) $((t % 1000 / 100)); }

if [[ -s $tarball && ${LANES_ROOT_REFRESH:-0} != 1 ]]; then
    mkdir -p "$dest"
    zstd -q -d -c -T0 "$tarball" | tar -x -p --numeric-owner -C "$dest" ||
        die "cannot unpack $tarball into $dest"
    say "$name root from cache ($tarball) in $(secs) s"
    exit 0
fi

# Build into a scratch dir next to the cache, then publish the tarball with a
# rename, so an interrupted build never leaves a half root in the cache.
work=$(mktemp -d "$cache/roots/.build-$name.XXXXXX")
cleanup() { rm -rf -- "$work"; }
trap cleanup EXIT
mapfile -t pkgs < <(root_packages "$suite")
mapfile -t sources < <(root_sources "$suite" "$mirror")
include=$(IFS=,; printf '%s' "${pkgs[*]}")
say "building a $name root from $mirror (${#pkgs[@]} packages; $(find "$debs" -name '*.deb' | wc -l) .debs cached)"
mkdir "$work/root"
# The hooks run in mmdebstrap's shell with the root as $1: cached .debs go in
# before apt runs, new ones come out before the root is packed.
# shellcheck disable=SC2016 # $1 belongs to the hooks
# A mirror that stalls fails the root, not the run: apt gives up a connection
# idle for 60 s (3 retries), and the whole build after
# LANES_MMDEBSTRAP_TIMEOUT s (default 1500; a cold root took 290-520 s on a
# busy 2-core machine).
timeout --foreground -k 30 "${LANES_MMDEBSTRAP_TIMEOUT:-1500}" \
    mmdebstrap --mode=root --variant=minbase --format=directory --skip=download/empty \
    --aptopt='APT::Install-Recommends "false"' --aptopt='Acquire::Check-Valid-Until "false"' \
    --aptopt='Acquire::http::Timeout "60"' --aptopt='Acquire::Retries "3"' \
    --include="$include" \
    --setup-hook='mkdir -p "$1/var/cache/apt/archives" && find '"'$debs'"' -maxdepth 1 -name "*.deb" -exec cp -t "$1/var/cache/apt/archives/" {} +' \
    --customize-hook='find "$1/var/cache/apt/archives" -maxdepth 1 -name "*.deb" -exec cp -n -t '"'$debs'"' {} + ; rm -f "$1"/var/cache/apt/archives/*.deb' \
    "$suite" "$work/root" "${sources[@]}" >"$work/mmdebstrap.log" 2>&1 || {
    tail -40 "$work/mmdebstrap.log" >&2
    die "mmdebstrap $suite failed"
}
say "$name root built in $(secs) s; caching it"
tar -c --numeric-owner -C "$work/root" . | zstd -q -T0 -3 -o "$work/root.tar.zst" ||
    die "cannot pack the $suite root"
mv -f "$work/root.tar.zst" "$tarball"
find "$cache/roots" -maxdepth 1 -name "$name-*.tar.zst" ! -name "$name-$key.tar.zst" -delete
# Old .debs of packages that moved on are dead weight: keep the newest version
# of each package only.
(cd "$debs" && find . -maxdepth 1 -name '*.deb' -printf '%f\n' | sort -t_ -k1,1 -k2,2V |
    awk -F_ '{ if ($1 == prev) print last; prev = $1; last = $0 }' | xargs -r rm -f --)
[[ -d $dest ]] && rmdir "$dest"
mv "$work/root" "$dest" || die "cannot move the root to $dest"
say "$name root ready at $dest in $(secs) s (cache: $tarball, $(du -sh "$tarball" | cut -f1))"
