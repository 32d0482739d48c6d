#!/bin/sh
# PID 1 of the soft-RoCE guest (busybox; copied into the initramfs by
# prepare.sh). Mounts the host root read-only over 9p and the work folder
# read-write at the same path, loads the RDMA modules, runs the guest script
# ($oxi_script from the kernel command line) chrooted into the host root,
# writes its exit status to $oxi_work/guest.rc and powers off.
export PATH=/bin:/sbin
uptime_s() { cut -d' ' -f1 /proc/uptime; }
fatal() { echo "[init] FATAL: $*"; poweroff -f; }
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "[init] t=$(uptime_s)s kernel $(uname -r)"
modprobe -a virtio_pci 9pnet_virtio 9p || fatal "9p modules"
R=/newroot
O="trans=virtio,version=9p2000.L,msize=512000"
mount -t 9p -o "$O,ro,cache=loose" hostroot $R || fatal "mount of the host root"
# Everything the guest will need is loaded now: inside the chroot there is
# no modprobe for the kernel's request_module() (crc32 for rxe's ICRC).
modprobe -a rdma_rxe ib_uverbs rdma_ucm ib_umad dummy crc32_generic crc32_pclmul || fatal "RDMA modules"
[ -n "$oxi_work" ] && [ -n "$oxi_script" ] || fatal "oxi_work= and oxi_script= are required"
mount -t tmpfs tmpfs $R/tmp
mkdir -p "$R$oxi_work"
mount -t 9p -o "$O" work "$R$oxi_work" || fatal "mount of the work folder"
for d in run var/tmp root; do [ -d $R/$d ] && mount -t tmpfs tmpfs $R/$d; done
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/shm $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
mount -t devpts devpts $R/dev/pts
hostname rxe-guest
echo "[init] t=$(uptime_s)s running $oxi_script"
chroot $R /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/root TERM=dumb OXI_WORK="$oxi_work" /bin/bash "$oxi_script"
rc=$?
echo "[init] t=$(uptime_s)s guest script exited rc=$rc"
echo $rc > "$R$oxi_work/guest.rc"
sync
poweroff -f
