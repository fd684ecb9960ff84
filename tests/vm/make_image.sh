#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Build (or restore from the cache) the VM image: a Debian 13 root with its own
# kernel, Slurm 24.11, munge and nftables, plus the libraries Lanes links. No Lanes
# in it and no Slurm config: the test brings both over 9p, so editing Lanes does
# not rebuild the image.
#   make_image.sh OUTDIR      -> OUTDIR/{vmlinuz,initrd.img,root.img}
set -euo pipefail
. "$(dirname "$0")/lib.sh"
out=${1:?usage: make_image.sh OUTDIR}
mkdir -p "$out"

packages=kmod,procps,iproute2,iputils-ping,nftables,munge,slurmctld,slurmd,slurm-client
packages+=,linux-image-amd64,initramfs-tools,zstd
packages+=,libslurm42t64,libnftables1,libnl-3-200,libnl-route-3-200,liblua5.4-0,libtomlplusplus3t64,libcurl4t64

key=$(vm_key "$VM_DIR/make_image.sh" "$VM_DIR/lib.sh" "$VM_DIR/files/init")
cache=$LANES_VM_CACHE/image-$key
if [ -f "$cache/root.img.zst" ] && [ -z "${LANES_VM_REBUILD:-}" ]; then
  zstd -q -d -f "$cache/root.img.zst" -o "$out/root.img"
  cp "$cache/vmlinuz" "$cache/initrd.img" "$out/"
  vm_log "image $key restored from $cache"
  exit 0
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/lanes-vmroot.XXXXXX")
trap 'rm -rf "$root"' EXIT
vm_log "building image $key (mmdebstrap $VM_SUITE)"
# A small initrd: only what mounts /dev/vda (ext4 on virtio-blk).
vm_mmdebstrap "$root" "$packages" \
  --essential-hook='mkdir -p "$1"/etc/initramfs-tools/conf.d; printf "MODULES=list\nCOMPRESS=zstd\n" > "$1"/etc/initramfs-tools/conf.d/lanes-vm' \
  --essential-hook='printf "virtio_pci\nvirtio_blk\next4\n" > "$1"/etc/initramfs-tools/modules'

echo lanesvm >"$root/etc/hostname"
# No NIC in the VM: a second loopback address, or getaddrinfo(AI_ADDRCONFIG) fails
# and slurmctld/slurmd die.
printf '127.0.0.1 localhost\n127.0.1.1 lanesvm\n' >"$root/etc/hosts"
install -m 755 "$VM_DIR/files/init" "$root/sbin/lanes-vm-init"
mkdir -p "$root/host" "$root/var/spool/slurmctld" "$root/var/spool/slurmd" "$root/var/log/slurm"
chroot "$root" chown slurm:slurm /var/spool/slurmctld /var/log/slurm
[ -s "$root/etc/munge/munge.key" ] || head -c 1024 /dev/urandom >"$root/etc/munge/munge.key"
chroot "$root" chown munge:munge /etc/munge/munge.key
chmod 400 "$root/etc/munge/munge.key"

kv=$(ls "$root/lib/modules" | head -1)
chroot "$root" mkinitramfs -o /boot/initrd.lanes "$kv"
cp "$root/boot/initrd.lanes" "$out/initrd.img"
cp -L "$root/boot/vmlinuz-$kv" "$out/vmlinuz"

# Trim what a throw-away test VM never reads: smaller image, faster cache.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/{doc,man,locale,info}/*
rm -f "$root"/boot/initrd.img-* "$root/boot/initrd.lanes"
k=$root/lib/modules/$kv/kernel
rm -rf "$k/sound" "$k"/drivers/{gpu,media,infiniband,staging,usb,hid,input,bluetooth,isdn,iio,hwmon,mtd,target} \
  "$k"/drivers/{firewire,thunderbolt,video,mmc,nvme,scsi,ata,md,leds,platform,power,edac,misc} \
  "$k"/drivers/net/{wireless,ethernet,can,usb,phy,dsa,ipa,wwan,hamradio,ieee802154}
chroot "$root" depmod -a "$kv"

rm -f "$out/root.img"
mkfs.ext4 -q -F -L lanesvm -d "$root" "$out/root.img" 2G
mkdir -p "$cache"
zstd -q -T0 -10 -f "$out/root.img" -o "$cache/root.img.zst"
cp "$out/vmlinuz" "$out/initrd.img" "$cache/"
vm_log "image $key cached in $cache ($(du -sh "$cache" | cut -f1))"
