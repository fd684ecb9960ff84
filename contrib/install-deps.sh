#!/usr/bin/env bash
# Install everything Lanes needs to build, test and run its demo on Debian 12.
# Idempotent; run as root.
set -euo pipefail
packages=(
  build-essential autoconf automake libtool pkg-config
  libslurm-dev slurm-wlm-basic-plugins-dev slurmctld slurmd slurm-client munge
  liblua5.4-dev lua5.4 libtomlplusplus-dev
  libnl-3-dev libnl-route-3-dev libnftables-dev nftables
  libgtest-dev libgmock-dev libbenchmark-dev
  iproute2 iperf3 tcpdump procps util-linux python3 xz-utils
  ethtool gnuplot-nox
  qemu-system-x86 mmdebstrap e2fsprogs zstd
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "lanes: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Debian's slurmctld/slurmd/munge packages try to start their services; the
  # policy-rc.d below keeps them off so only our tests start daemons.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [[ ! -e $policy ]]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod 755 "$policy"; created_policy=1; fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if ((created_policy)); then rm -f "$policy"; fi
fi
