#!/usr/bin/env bash
# Runs a host-side command in a private mount and network namespace (only
# lo, up: Open MPI 5's launcher ignores lo when other interfaces exist) in
# which the Debian 13 root has /proc, /sys, /dev and a private /dev/shm,
# and our libfabric.so.1 sits in a per-run directory inside the root,
# removed afterwards, so parallel runs share nothing. The command runs
# programs of the root by prefixing them with $OXI_CHROOT, which enters the
# root with our library first on the library path; $OXI_IN is the per-run
# directory as seen inside the root (lib/ and work/, a copy of WORKDIR).
#
#   inroot.sh ROOT LIBDIR WORKDIR command...
set -eu
root=$1 lib=$2 work=$3
shift 3
run=$(mktemp -d "$root/tmp/oxi.XXXXXX")
trap 'rm -rf "$run"' EXIT
mkdir -p "$run/lib" "$run/work"
cp -a "$lib"/libfabric.so* "$run/lib/"
[ -z "$work" ] || cp -a "$work"/. "$run/work/"
export OXI_IN=/tmp/$(basename "$run") OXI_TRIXIE=$root
export OXI_CHROOT="chroot $root env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
LD_LIBRARY_PATH=$OXI_IN/lib FI_SOCKETS_IFACE=lo OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
unshare --mount --net --propagation private --fork bash -c '
	set -e
	root=$1
	shift
	ip link set lo up
	mount -t proc proc "$root/proc"
	mount -t sysfs sys "$root/sys"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs -o size=512m tmpfs "$root/dev/shm"
	exec "$@"
' inroot "$root" "$@"
