# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the host-side VM scripts (sourced). A pure cgroup v2 Debian 13 node
# with Slurm 24.11 under QEMU TCG: no KVM needed.
#
# Caches (kept across runs; a changed input makes a new key, old keys can go):
#   $LANES_VM_CACHE/debs/            .debs of every root (mmdebstrap hooks)
#   $LANES_VM_CACHE/image-<key>/     vmlinuz, initrd.img, root.img.zst
#   $LANES_VM_CACHE/buildroot-<key>.tar.zst   the trixie root Lanes is compiled in
#   $LANES_VM_CACHE/ccache/          compiler cache of those builds
# Keys hash the scripts and files that make each thing, so editing them rebuilds.

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LANES_VM_CACHE=${LANES_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lanes/vm}
VM_SUITE=${VM_SUITE:-trixie}
mkdir -p "$LANES_VM_CACHE/debs"

vm_log() { echo "[vm $(date +%T)] $*" >&2; }

# The Debian mirror the host already uses (deb822 or one-line sources).
vm_mirror() {
  local m
  m=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
  [ -n "$m" ] || m=$(awk '$1=="deb" && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  echo "${m:-http://deb.debian.org/debian}"
}

vm_key() { cat "$@" | sha256sum | cut -c1-16; }

# mmdebstrap SUITE ROOT PACKAGES(comma list) [extra mmdebstrap args...]
# .debs come from and go back to the shared deb cache.
vm_mmdebstrap() {
  local root=$1 include=$2; shift 2
  local debs=$LANES_VM_CACHE/debs
  rm -rf "$root"
  # A stalled mirror fails the image, not the run (as tests/roots/make_root.sh).
  timeout --foreground -k 30 "${LANES_MMDEBSTRAP_TIMEOUT:-1500}" \
    mmdebstrap --quiet --variant=minbase --include="$include" \
    --aptopt='Acquire::http::Timeout "60"' --aptopt='Acquire::Retries "3"' \
    --setup-hook='mkdir -p "$1"/var/cache/apt/archives; for f in '"$debs"'/*.deb; do [ -e "$f" ] && ln -f "$f" "$1"/var/cache/apt/archives/ 2>/dev/null || cp -n "$f" "$1"/var/cache/apt/archives/ 2>/dev/null; done; true' \
    --customize-hook='for f in "$1"/var/cache/apt/archives/*.deb; do [ -e "$f" ] && cp -n "$f" '"$debs"'/ ; done; true' \
    --skip=download/empty "$@" "$VM_SUITE" "$root" "$(vm_mirror)"
}
