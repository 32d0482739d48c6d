#!/usr/bin/env bash
# Ensures what the soft-RoCE guest needs and prints the cache folder.
#
# Host side: installs (apt-get, only when missing) QEMU, a static busybox and
# rdma-core's userland; the guest runs the host's own programs, because the
# host root is shared into it read-only over 9p. Cache side, built once into
# $OXI_CACHE/rxe-vm (outside the checkout) and reused: a Debian kernel
# package downloaded (not installed) and unpacked, its ELF vmlinux taken out
# of the bzImage (QEMU boots it directly through PVH, which is faster than
# SeaBIOS + decompression), and a small busybox initramfs holding the 9p and
# RDMA modules and an /init that runs one guest script (see run.sh).
# Concurrent callers wait on one lock. Adapted from the worked example in
# shared/reference/rxe-vm.
set -euo pipefail
cache=${OXI_RXE_CACHE:-${OXI_CACHE:-/var/cache/oxifabric}/rxe-vm}
here=$(cd "$(dirname "$0")" && pwd)

pkgs="qemu-system-x86 busybox-static rdma-core ibverbs-providers ibverbs-utils libibverbs-dev librdmacm-dev iproute2 python3"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
	echo "installing:$missing" >&2
	log=$(mktemp)
	{ apt-get update -qq || true; } >"$log" 2>&1
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		-o DPkg::Lock::Timeout=600 $missing >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
	rm -f "$log"
fi

mkdir -p "$(dirname "$cache")"
exec 9>"$cache.lock"
flock 9
# The stamp names the inputs: a changed /init (init.sh) rebuilds the initramfs.
stamp="$(sha256sum "$here/init.sh" | cut -c1-16)"
if [ "$(cat "$cache/.complete" 2>/dev/null)" = "$stamp" ]; then
	echo "$cache"
	exit 0
fi
echo "preparing the soft-RoCE guest in $cache" >&2
mkdir -p "$cache"
cd "$cache"

# 1. The kernel: Debian's current linux-image, unpacked here only.
if [ ! -d kroot/boot ]; then
	kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
	rm -rf kroot.partial dl && mkdir -p dl
	(cd dl && apt-get download -q -o APT::Sandbox::User=root "$kpkg" >/dev/null)
	dpkg -x dl/"$kpkg"_*.deb kroot.partial
	rm -rf dl
	mv kroot.partial kroot
fi
kver=$(ls kroot/lib/modules | head -n1)
[ -f "kroot/lib/modules/$kver/modules.dep" ] || busybox depmod -b "$cache/kroot" "$kver"

# 2. vmlinux: the xz payload of the bzImage is the ELF kernel.
[ -f vmlinux ] || python3 - "kroot/boot/vmlinuz-$kver" vmlinux.tmp <<'PY'
import lzma, sys
d = open(sys.argv[1], 'rb').read()
out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(d[d.find(b'\xfd7zXZ\x00'):])
assert out[:4] == b'\x7fELF', "no ELF kernel inside the bzImage"
open(sys.argv[2], 'wb').write(out)
PY
[ -f vmlinux ] || mv vmlinux.tmp vmlinux

# 3. The initramfs: busybox, the modules below with their dependencies, /init.
ird=$cache/initramfs
want="virtio_pci 9pnet_virtio 9p rdma_rxe ib_uverbs rdma_ucm ib_umad dummy crc32_generic crc32_pclmul"
rm -rf "$ird"
mkdir -p "$ird"/{bin,sbin,proc,sys,dev,newroot,lib/modules/$kver}
cp /bin/busybox "$ird/bin/busybox"
for a in $(busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$ird/bin/$a"; done
ln -sf ../bin/busybox "$ird/sbin/modprobe"
declare -A seen=()
add_module() {
	local name=${1//-/_} re line path d
	[ -n "${seen[$name]:-}" ] && return 0
	seen[$name]=1
	re=${name//_/[-_]}
	line=$(grep -E "(^|/)$re\.ko(\.[gx]z|\.zst)?:" "kroot/lib/modules/$kver/modules.dep" | head -n1)
	[ -n "$line" ] || { echo "kernel $kver has no module $name" >&2; exit 1; }
	path=${line%%:*}
	mkdir -p "$ird/lib/modules/$kver/$(dirname "$path")"
	cp "kroot/lib/modules/$kver/$path" "$ird/lib/modules/$kver/$path"
	for d in ${line#*:}; do
		d=$(basename "$d")
		add_module "${d%%.ko*}"
	done
}
for m in $want; do add_module "$m"; done
busybox depmod -b "$ird" "$kver"
install -m 0755 "$here/init.sh" "$ird/init"
(cd "$ird" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$cache/initramfs.cpio.gz.tmp")
mv initramfs.cpio.gz.tmp initramfs.cpio.gz
rm -rf "$ird"
echo "$stamp" > .complete
echo "prepared: kernel $kver, modules: ${!seen[*]}" >&2
echo "$cache"
