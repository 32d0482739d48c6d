#!/usr/bin/env bash
# Ensures a Debian 13 (trixie) root filesystem with upstream's libfabric 2.1
# clients (libfabric-bin), Open MPI 5.0 and a C compiler for mpicc, and
# prints its path. Built once by debootstrap (1-1.5 min, about 1 GB) and
# cached outside the checkout, so later runs cost nothing; concurrent callers
# wait on one lock. OXI_TRIXIE_ROOT overrides the location.
set -eu
root=${OXI_TRIXIE_ROOT:-${OXI_CACHE:-/var/cache/oxifabric}/trixie-root}
mirror=${OXI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
pkgs=libfabric-bin,openmpi-bin,libopenmpi-dev,automake,gcc,libc6-dev
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9
if [ ! -e "$root/.oxifabric-complete" ]; then
	command -v debootstrap >/dev/null || { echo "debootstrap is not installed (make deps)" >&2; exit 1; }
	tmp=$root.partial
	rm -rf "$tmp"
	echo "creating the Debian 13 root in $root (debootstrap, about a minute)" >&2
	# automake is listed because the resolver otherwise fails on
	# automake-1.17 (pulled in by libopenmpi-dev).
	debootstrap --variant=minbase --include="$pkgs" trixie "$tmp" "$mirror" >"$tmp.log" 2>&1 ||
		{ tail -20 "$tmp.log" >&2; exit 1; }
	rm -rf "$tmp/var/cache/apt/archives"/*.deb
	rm -rf "$root"
	mv "$tmp" "$root"
	touch "$root/.oxifabric-complete"
fi
echo "$root"
