#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/make_root.sh DEST: a clean Debian 12 root for the install test,
# with Debian's Slurm and the tools the real-cluster tests use, but no build
# tools and nothing of Lanes. Made with mmdebstrap once and cached as a tarball
# (LANES_CACHE_DIR, default /var/cache/lanes): later runs only unpack it.
#
#   tests/pkg/make_root.sh DEST    # DEST must not exist or be empty
#
# The key of the cached tarball hashes this script (the package list) and the
# mirror, so a change builds a new root. Mirror: $LANES_DEBIAN_MIRROR, else
# the first Debian URI in this machine's apt sources. Needs root, mmdebstrap
# and zstd. (The slurmver branch's tests/roots/make_root.sh builds roots with
# build tools for several Debian suites; this one is deliberately smaller.)
set -euo pipefail
dest=${1:?usage: make_root.sh DEST}
say() { printf 'make_root: %s\n' "$*" >&2; }
die() { printf 'make_root: ERROR: %s\n' "$*" >&2; exit 1; }
((EUID == 0)) || die "needs root"
command -v mmdebstrap >/dev/null || die "mmdebstrap missing (apt-get install mmdebstrap)"
command -v zstd >/dev/null || die "zstd missing (apt-get install zstd)"

packages=(
    # Slurm and munge, as a site installs them
    slurmctld slurmd slurm-client munge
    # what the cluster harness and the e2e tests run
    iproute2 nftables iperf3 tcpdump python3 procps util-linux passwd hostname iputils-ping
    # Lanes' shared libraries (what the .debs' shlibs Depends name)
    liblua5.4-0 libtomlplusplus3 libnl-3-200 libnl-route-3-200 libnftables1 libslurm38 libcurl4
)

mirror=${LANES_DEBIAN_MIRROR:-}
if [[ -z $mirror ]]; then
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }')
fi
if [[ -z $mirror ]]; then
    mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i !~ /security/) { print $i; exit } }')
fi
[[ -n $mirror ]] || die "no Debian mirror in apt's sources; set LANES_DEBIAN_MIRROR"
mirror=${mirror%/}
security=${LANES_DEBIAN_SECURITY_MIRROR:-${mirror%/debian}/debian-security}

cache=${LANES_CACHE_DIR:-/var/cache/lanes}/roots
key=$({ printf '%s\n' "$mirror" "$security"; cat "$0"; } | sha256sum | cut -c1-16)
tarball=$cache/pkg-bookworm-$key.tar.zst
mkdir -p "$cache"
exec 9>"$cache/pkg-bookworm.lock"
flock 9
if [[ ! -s $tarball ]]; then
    say "building $tarball (once; later runs unpack it)"
    rm -f "$cache"/pkg-bookworm-*.tar.zst
    mmdebstrap --quiet --mode=root --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
        bookworm "$tarball.tmp.tar.zst" \
        "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
        "deb $security bookworm-security main" ||
        { rm -f "$tarball.tmp.tar.zst"; die "mmdebstrap failed"; }
    mv -f "$tarball.tmp.tar.zst" "$tarball"
fi
flock -u 9
mkdir -p "$dest"
[[ -z $(ls -A "$dest") ]] || die "$dest is not empty"
tar --zstd -xf "$tarball" -C "$dest"
