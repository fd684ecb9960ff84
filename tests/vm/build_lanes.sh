#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Compile Lanes for the VM's Debian 13 (Slurm 24.11 headers, GCC 14) in a chroot
# root made with mmdebstrap, and put what the node needs in OUTDIR:
#   spank_lanes.so job_submit_lanes.so lanesctl lanes-agent
#   build_lanes.sh SRCDIR OUTDIR
# The root is kept in the cache (keyed on this script) and builds go through
# ccache, so a warm run only recompiles what changed; builds in it take turns.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
src=$(cd "${1:?usage: build_lanes.sh SRCDIR OUTDIR}" && pwd)
out=${2:?usage: build_lanes.sh SRCDIR OUTDIR}
mkdir -p "$out"

packages=build-essential,autoconf,automake,libtool,pkg-config,ccache,libslurm-dev
packages+=,liblua5.4-dev,libtomlplusplus-dev,libnl-3-dev,libnl-route-3-dev,libnftables-dev
packages+=,libgtest-dev,libgmock-dev,nlohmann-json3-dev,libcurl4-openssl-dev

# The root depends on the package list and how roots are made, not on the
# compile steps below: editing those does not rebuild it.
key=$( (echo "$packages"; cat "$VM_DIR/lib.sh") | sha256sum | cut -c1-16)
root=$LANES_VM_CACHE/buildroot-$key
# One build at a time in the shared root: two test runs on one machine (two
# clones, or CI beside a developer) would otherwise replace each other's
# sources mid-build. The lock goes with this process.
mkdir -p "$LANES_VM_CACHE"
exec 9>"$root.lock"
flock 9
if [ ! -f "$root/.lanes-ready" ]; then
  vm_log "building the $VM_SUITE build root $key"
  vm_mmdebstrap "$root" "$packages"
  rm -rf "$root"/var/cache/apt/archives/*.deb
  touch "$root/.lanes-ready"
fi

# The sources Git knows (or, outside a checkout, the tree without build dirs).
rm -rf "$root/src"
mkdir -p "$root/src" "$LANES_VM_CACHE/ccache"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$root/src" -xf -
else
  tar -C "$src" --exclude='./build*' --exclude='*.o' --exclude='*.lo' --exclude='.libs' -cf - . | tar -C "$root/src" -xf -
fi

vm_log "compiling Lanes in the $VM_SUITE root"
# A private mount namespace: the binds vanish with it.
unshare -m bash -euo pipefail -c '
  root=$1 ccache_dir=$2
  mkdir -p "$root/ccache"
  mount --bind "$ccache_dir" "$root/ccache"
  mount -t proc proc "$root/proc"
  chroot "$root" env -i PATH=/usr/bin:/bin CCACHE_DIR=/ccache HOME=/root bash -euo pipefail -c "
    cd /src && autoreconf -fi >/dev/null 2>&1 && mkdir -p b && cd b
    ../configure -q CXX=\"ccache g++\" CC=\"ccache gcc\" >/dev/null
    make -s -j\$(nproc) spank/spank_lanes.la job_submit/job_submit_lanes.la lanesctl/lanesctl agent/lanes-agent
  "' _ "$root" "$LANES_VM_CACHE/ccache"

cp "$root/src/b/.libs/spank_lanes.so" "$root/src/b/.libs/job_submit_lanes.so" "$out/" 2>/dev/null ||
  cp "$root"/src/b/spank/.libs/spank_lanes.so "$root"/src/b/job_submit/.libs/job_submit_lanes.so "$out/"
cp "$root/src/b/lanesctl/lanesctl" "$root/src/b/agent/lanes-agent" "$out/"
# 24.11's slurm_version.h has SLURM_VERSION_NUMBER only (no _STRING).
chroot "$root" dpkg-query -W -f '${Version}\n' libslurm-dev >"$out/slurm-version" 2>/dev/null || true
vm_log "Lanes built against libslurm-dev $(cat "$out/slurm-version")"
