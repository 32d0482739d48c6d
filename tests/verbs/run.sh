#!/usr/bin/env bash
# Boots the soft-RoCE guest once and runs one guest script in it; exits with
# that script's status (124: the guest did not finish within
# $OXI_VM_TIMEOUT seconds; 125: it never got to report a status).
#
# Usage: run.sh WORK GUEST-SCRIPT
#   WORK          a host folder the guest mounts read-write at the same path
#                 (everything else it sees is the host root, read-only);
#                 the console log goes to WORK/console.log
#   GUEST-SCRIPT  absolute path of a bash script (run chrooted into the
#                 host root, with $OXI_WORK set to WORK)
# The cache comes from prepare.sh. No network: the guest has no NIC.
set -uo pipefail
work=$(cd "${1:?work folder}" && pwd)
script=${2:?guest script}
here=$(cd "$(dirname "$0")" && pwd)
cache=$("$here/prepare.sh") || exit 1
rm -f "$work/guest.rc"
start=$EPOCHREALTIME
# TCG: KVM is not available on the machines this runs on. PVH boot of the
# ELF vmlinux through qboot skips SeaBIOS and the kernel's decompression.
timeout "${OXI_VM_TIMEOUT:-300}" qemu-system-x86_64 \
	-accel tcg,thread=multi -cpu max -m "${OXI_VM_MEM:-4096}" -smp 2 \
	-nographic -no-reboot -nic none \
	-bios /usr/share/qemu/qboot.rom -kernel "$cache/vmlinux" -initrd "$cache/initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1 quiet oxi_work=$work oxi_script=$script" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs "local,path=$work,mount_tag=work,security_model=none" \
	</dev/null >"$work/console.log" 2>&1
qrc=$?
grc=$(cat "$work/guest.rc" 2>/dev/null || echo none)
echo "vm: qemu rc=$qrc guest rc=$grc wall=$(python3 -c "print(f'{$EPOCHREALTIME - $start:.1f}')")s" >>"$work/console.log"
[ "$qrc" = 0 ] || exit "$qrc"
[ "$grc" = none ] && exit 125
exit "$grc"
