#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Boot the VM image under QEMU (TCG: no KVM needed), with SHARE as /host inside.
# The guest runs SHARE/run.sh as root and powers off; the console goes to
# SHARE/console.log. Without SHARE/run.sh the console is interactive.
#   run_vm.sh IMAGEDIR SHARE
set -euo pipefail
. "$(dirname "$0")/lib.sh"
img=${1:?usage: run_vm.sh IMAGEDIR SHARE}
share=${2:?usage: run_vm.sh IMAGEDIR SHARE}
append="console=ttyS0 root=/dev/vda rw init=/sbin/lanes-vm-init cgroup_no_v1=all panic=-1 quiet"
qemu=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "${LANES_VM_SMP:-2}" -m "${LANES_VM_MEM:-1536}"
  -nographic -vga none -no-reboot -nic none
  -kernel "$img/vmlinuz" -initrd "$img/initrd.img" -append "$append"
  # snapshot=on: the image is never written, so it can be reused as is
  -drive "file=$img/root.img,format=raw,if=virtio,snapshot=on,cache=unsafe"
  -virtfs "local,path=$share,mount_tag=host,security_model=none,id=host")
if [ ! -f "$share/run.sh" ]; then exec "${qemu[@]}"; fi
# A guest kernel that panics before its init ran (TCG has crashed this way in
# early boot, in timer code, before any of the test's code) is booted again,
# at most twice; each such console is kept as console.log.boot-N. A panic after
# "LANESVM READY" is the test's and ends the run.
for boot in 1 2 3; do
  start=$(date +%s)
  rc=0
  timeout --foreground -k 30 "${LANES_VM_TIMEOUT:-1200}" "${qemu[@]}" </dev/null >"$share/console.log" 2>&1 || rc=$?
  vm_log "VM ran $(($(date +%s) - start)) s (qemu exit $rc, boot $boot)"
  if grep -q 'LANESVM READY' "$share/console.log" || ! grep -q 'Kernel panic' "$share/console.log"; then break; fi
  cp "$share/console.log" "$share/console.log.boot-$boot"
  vm_log "the guest kernel panicked before its init ran: $(grep -m1 'Kernel panic' "$share/console.log")"
done
exit $rc
