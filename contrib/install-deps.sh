#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install everything Lanes needs to build, test and run its demo on Debian 12
# (bookworm), 13 (trixie) or unstable (sid). Idempotent; run as root.
# `install-deps.sh --list` prints the packages and installs nothing
# (tests/roots/make_root.sh builds Debian roots from it).
set -euo pipefail
# The sanitizer and fuzzer builds' clang (tests/build/sanitized_tree.sh,
# LANES_SANITIZE_CC): Debian 12's default clang (14) is too old, so 12 gets
# clang-16; 13 its default, 19; unstable and later the default clang of the
# release (llvm-defaults). LANES_CLANG_VERSION=N picks clang-N anywhere.
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
clang_version=${LANES_CLANG_VERSION:-}
if [[ -z $clang_version ]]; then
  case $codename in
    bookworm) clang_version=16 ;;
    trixie) clang_version=19 ;;
  esac
fi
if [[ -n $clang_version ]]; then clang=("clang-$clang_version" "libclang-rt-$clang_version-dev")
else clang=(clang libclang-rt-dev); fi
packages=(
  build-essential autoconf automake libtool pkg-config ccache
  libslurm-dev slurm-wlm-basic-plugins-dev slurmctld slurmd slurm-client munge
  liblua5.4-dev lua5.4 libtomlplusplus-dev
  libnl-3-dev libnftables-dev nftables libcurl4-openssl-dev
  libgtest-dev libbenchmark-dev nlohmann-json3-dev
  "${clang[@]}" clang-format
  iproute2 iperf3 tcpdump procps util-linux python3 xz-utils
  ethtool gnuplot-nox
  dpkg-dev debhelper dh-autoreconf fakeroot lintian rpm bash-completion
  prometheus prometheus-node-exporter mmdebstrap zstd curl openssl
  qemu-system-x86 e2fsprogs
  mariadb-server slurmdbd
)
if [[ ${1:-} == --list ]]; then printf '%s\n' "${packages[@]}"; exit 0; fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "lanes: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # A mirror that stalls fails here, named, instead of holding CI to its limit.
  apt=(timeout --foreground -k 30 1800 apt-get -o Acquire::http::Timeout=60 -o Acquire::Retries=3)
  "${apt[@]}" update -qq || { echo "lanes: apt-get update failed or timed out" >&2; exit 1; }
  # Debian's slurmctld/slurmd/munge packages try to start their services; the
  # policy-rc.d below keeps them off so only our tests start daemons.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [[ ! -e $policy ]]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod 755 "$policy"; created_policy=1; fi
  "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { rc=$?; ((created_policy)) && rm -f "$policy"; echo "lanes: apt-get install failed or timed out (exit $rc)" >&2; exit 1; }
  if ((created_policy)); then rm -f "$policy"; fi
fi
