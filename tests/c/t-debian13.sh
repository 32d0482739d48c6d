#!/usr/bin/env bash
# Debian 13's upstream-built 2.x binaries run unmodified on our library,
# inside a Debian 13 root (tests/trixie/root.sh builds it once, cached
# outside the checkout): libfabric-bin 2.1's fi_info (--version, -l, a
# listing) and fi_pingpong (-p sockets -e msg|rdm|dgram; the provider names
# tcp, tcp;ofi_rxm, udp and tcp with its 2.x native RDM), and Open MPI 5.0's
# mtl ofi running the fabtests-compat MPI suite (built with that root's
# mpicc) with 2 and 4 ranks over sockets and over tcp. These binaries bind
# fi_getinfo@FABRIC_1.8 and fi_fabric2 is exported; Open MPI 5.0.7 binds
# only FABRIC_1.0-1.5.
set -u
root=$("$OXI_ROOT/tests/trixie/root.sh") || exit 1
work=$OXI_WORK/debian13-$$
mkdir -p "$work"
cp "$OXI_ROOT/fabtests-compat/mpi/mpi_suite.c" "$work/"
trap 'rm -rf "$work"' EXIT
exec "$OXI_ROOT/tests/trixie/inroot.sh" "$root" "$OXI_LIB" "$work" bash -c '
	set -u
	. "$OXI_ROOT/tests/c/pingpong-lib.sh"
	c() { $OXI_CHROOT "$@"; }
	echo "fi_getinfo versions bound by the root'"'"'s binaries:"
	for b in usr/bin/fi_info usr/bin/fi_pingpong; do
		echo "  $b: $(objdump -T "$OXI_TRIXIE/$b" | grep -o "FABRIC_1\.[0-9]*) fi_[a-z0-9]*" | sort -u | tr "\n" " ")"
	done
	out=$(c fi_info --version)
	echo "$out"
	grep -q "^libfabric api: 2.1$" <<<"$out" || { echo "FAIL: not Debian 13 fi_info"; fail=1; }
	grep -qx "libfabric: $OXI_API_RELEASE" <<<"$out" || { echo "FAIL: want libfabric: $OXI_API_RELEASE"; fail=1; }
	lib=$(c env LD_DEBUG=libs fi_info --version 2>&1 | sed -n "s/.*calling init: \(.*libfabric.*\)/\1/p" | head -1)
	case "$lib" in "$OXI_IN"/lib/*) echo "ok: fi_info loaded $lib";; *) echo "FAIL: fi_info loaded $lib, not ours"; fail=1;; esac
	out=$(c fi_info -l) && grep -q "^sockets:" <<<"$out" && grep -q "^tcp:" <<<"$out" &&
		echo "ok: fi_info -l: $(grep -c ":$" <<<"$out") providers" || { echo "FAIL: fi_info -l"; echo "$out"; fail=1; }
	out=$(c fi_info) && n=$(grep -c "^provider:" <<<"$out") && [ "$n" -gt 0 ] &&
		echo "ok: fi_info: $n entries" || { echo "FAIL: fi_info"; echo "$out"; fail=1; }
	out=$(c fi_info -p tcp) && types=$(awk "/^provider:/ { p = \$2 } /type:/ && p == \"tcp\" { print \$2 }" <<<"$out" | sort -u | tr "\n" " ") &&
		[ "$types" = "FI_EP_MSG FI_EP_RDM " ] && echo "ok: fi_info -p tcp at API 2.1: $types" ||
		{ echo "FAIL: fi_info -p tcp: want native MSG and RDM"; echo "$out"; fail=1; }
	PINGPONG_ENV=$OXI_CHROOT
	for ep in msg rdm dgram; do pingpong "sockets-$ep" "$ep" 127.0.0.1 -p sockets; done
	pingpong tcp-msg msg 127.0.0.1 -p tcp
	pingpong tcp-rdm rdm 127.0.0.1 -p tcp
	pingpong tcp-rxm rdm 127.0.0.1 -p "tcp;ofi_rxm"
	pingpong udp dgram 127.0.0.1 -p udp

	if ! c mpicc -O2 -Wall -Wextra -Werror -o "$OXI_IN/work/mpi_suite" "$OXI_IN/work/mpi_suite.c"; then
		echo "FAIL: mpicc in the Debian 13 root"; exit 1
	fi
	for prov in sockets tcp; do
		for n in 2 4; do
			out=$(timeout 300 $OXI_CHROOT mpirun -np "$n" --oversubscribe -x LD_LIBRARY_PATH -x FI_SOCKETS_IFACE \
				--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov" --mca mtl_ofi_verbose 100 \
				"$OXI_IN/work/mpi_suite" 2>&1 | tr -d "\0")
			if grep -q "mpi ($n ranks): 22 passed, 0 failed" <<<"$out"; then
				echo "ok: Open MPI 5 mtl ofi ($prov, $(grep -o "mtl:ofi:provider: [^ ]*" <<<"$out" | sort -u | head -1)): $(grep "mpi ($n ranks)" <<<"$out")"
			else
				echo "$out" | tail -40; echo "FAIL: Open MPI 5 -np $n over $prov"; fail=1
			fi
		done
	done
	exit $fail
'
