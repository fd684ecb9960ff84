#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# spank_lanes on a production-shaped node, in a VM: Debian 13, its own kernel,
# pure cgroup v2, Slurm 24.11 with proctrack/cgroup + task/cgroup + cgroup/v2,
# PrologFlags=Alloc,Contain, both Lanes plugins built for that Slurm. The guest
# (guest/node_test.sh) checks that a batch step, an srun step and a process
# adopted into the job send the class's DSCP and are capped, that a process
# outside the job is not, that a launch Lanes cannot classify fails, that
# `nft flush ruleset` and a deleted root qdisc under a running job are repaired
# by `lanesctl reconcile` and by lanes-agent (#19), that a churn of short jobs
# with a flush and an agent kill -9 in the middle leaves nothing, that a job of
# partition "bulk" takes its class's path, a real 802.1Q VLAN lv0.42 (#21; the
# host tests use a VXLAN segment, as kernels without 8021q have no VLANs): its
# packets arrive tagged 42, its ip rule, route and lanes_paths element exist
# while it runs and go with it, its tasks get NCCL_SOCKET_IFNAME==lv0.42, a
# process outside it sends untagged, and that nothing is left afterwards. This
# script builds what is missing (cached, see lib.sh; the node's binaries come
# from the Slurm 24.11 test's build when it built this same tree, see
# tests/slurm_versions/README.md), boots the VM, and fails when any guest
# check fails.
#
# Needs root (mmdebstrap, chroot), qemu-system-x86, mmdebstrap and the network to
# reach the Debian mirror on a cold cache. LANES_VM_KEEP=1 keeps the run dir.
set -uo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: $(basename "$0") needs root (mmdebstrap, chroot, mkfs)"
  exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${LANES_SRCDIR:-$(cd "$here/../.." && pwd)}
for cmd in qemu-system-x86_64 mmdebstrap mkfs.ext4 zstd unshare; do
  command -v "$cmd" >/dev/null || { echo "FAIL: $cmd not found (bash contrib/install-deps.sh)"; exit 1; }
done
run=$(mktemp -d "${TMPDIR:-/tmp}/lanes-vm-run.XXXXXX")
cleanup() { [ -n "${LANES_VM_KEEP:-}" ] && echo "kept $run" || rm -rf "$run"; }
trap cleanup EXIT
share=$run/share
mkdir -p "$share/out" "$share/lanes" "$share/files" "$run/img"
t0=$(date +%s)
# The Slurm 24.11 test builds the same tree for the same Debian release and
# shares the node's binaries (tests/slurm_versions): use them when they are of
# this very tree, else build here.
shared=${LANES_BUILDDIR:-$srcdir/build}/tests/vm/lanes-trixie
# shellcheck source=../slurm_versions/slurm_versions.sh
. "$srcdir/tests/slurm_versions/slurm_versions.sh"
if [ -f "$shared/ready" ] && [ "$(cat "$shared/tree-hash")" = "$(slurm_versions_tree_hash "$srcdir")" ] &&
  cp "$shared"/{spank_lanes.so,job_submit_lanes.so,lanesctl,lanes-agent,slurm-version} "$share/lanes/"; then
  echo "Lanes for the VM: the Slurm 24.11 test's build of this tree (tree $(cat "$shared/tree-hash"), libslurm-dev $(cat "$shared/slurm-version"))"
else
  bash "$here/build_lanes.sh" "$srcdir" "$share/lanes" || { echo "FAIL: building Lanes for the VM"; exit 1; }
fi
t1=$(date +%s)
bash "$here/make_image.sh" "$run/img" || { echo "FAIL: making the VM image"; exit 1; }
t2=$(date +%s)
cp "$here"/files/{slurm.conf,cgroup.conf,plugstack.conf,lanes.toml} "$share/files/"
cp "$here/guest/node_test.sh" "$share/run.sh"
bash "$here/run_vm.sh" "$run/img" "$share"
t3=$(date +%s)
echo "times: build Lanes $((t1 - t0)) s, image $((t2 - t1)) s, VM $((t3 - t2)) s"
results=$share/out/results
if [ ! -s "$results" ]; then
  echo "FAIL: the guest reported nothing; console:"
  tail -40 "$share/console.log"
  exit 1
fi
cat "$results"
if grep -q '^FAIL' "$results"; then
  echo "--- guest log"; tail -60 "$share/out/guest.log"
  echo "--- slurmd log (lanes)"; grep -i lanes "$share/out/slurmd.log" 2>/dev/null | tail -30
  exit 1
fi
echo "PASS: $(grep -c '^PASS' "$results") checks in the VM"
