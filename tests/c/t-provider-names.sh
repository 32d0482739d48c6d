#!/usr/bin/env bash
# The provider names users type: our engine answers to tcp, tcp;ofi_rxm, udp
# and udp;ofi_rxd as upstream's providers of those names do. For every
# selection (fi_info -p, FI_PROVIDER with includes, excludes and layered
# names) Debian 12's fi_info lists the same (provider, endpoint type) pairs
# on our library as on Debian's own libfabric 1.17, restricted to the names
# we offer. Then Debian's fi_pingpong and Open MPI 4.1 (mtl ofi,
# mtl_ofi_provider_include tcp) run over those names.
set -u
. "$OXI_ROOT/tests/c/pingpong-lib.sh"
ours_names='^(sockets|tcp|tcp;ofi_rxm|udp|udp;ofi_rxd)$'
pairs() {
	timeout 30 fi_info "$@" 2>/dev/null | awk -v re="$ours_names" '
		/provider:/ { p = $2 } /type:/ && p ~ re { print p, $2 }' | sort -u
}
# listing LIB FI_PROVIDER fi_info-args...: pairs on LIB (empty: Debian's).
listing() {
	local lib=$1 fp=$2
	shift 2
	(
		if [ -n "$lib" ]; then export LD_LIBRARY_PATH=$lib; else unset LD_LIBRARY_PATH FI_SOCKETS_IFACE; fi
		if [ -n "$fp" ]; then export FI_PROVIDER=$fp; else unset FI_PROVIDER; fi
		pairs "$@"
	)
}
check() {
	local what=$1 fp=$2 theirs ours
	shift 2
	theirs=$(listing "" "$fp" "$@")
	ours=$(listing "$OXI_LIB" "$fp" "$@")
	if [ -z "$theirs" ] && [ "$fp" != ofi_rxm ]; then
		echo "FAIL: $what: Debian's libfabric lists nothing (test cannot tell)"; fail=1
	elif [ "$theirs" != "$ours" ]; then
		echo "FAIL: $what: Debian's libfabric lists"; echo "$theirs"; echo "ours:"; echo "$ours"; fail=1
	else
		echo "ok: $what: $(tr '\n' ' ' <<<"$ours")"
	fi
}
for p in tcp "tcp;ofi_rxm" TCP ofi_rxm udp "udp;ofi_rxd"; do
	check "fi_info -p $p" "" -p "$p"
done
for fp in tcp "tcp;ofi_rxm" "^ofi_rxm" "^tcp" "^udp" udp "udp;ofi_rxd" "tcp,sockets" "^tcp;ofi_rxm" ofi_rxm; do
	check "FI_PROVIDER=$fp" "$fp"
done

# FI_TCP_IFACE and FI_UDP_IFACE pick the interfaces those names list, as
# upstream's tcp and udp read them (FI_SOCKETS_IFACE unset: it would
# filter ours anyway).
domains() { # LIB VAR PROVIDER: the domains (interfaces) listed with VAR=lo
	(
		unset FI_SOCKETS_IFACE FI_PROVIDER
		if [ -n "$1" ]; then export LD_LIBRARY_PATH=$1; else unset LD_LIBRARY_PATH; fi
		export "$2=lo"
		timeout 30 fi_info -p "$3" 2>/dev/null | awk '/domain:/ { print $2 }' | sort -u | tr '\n' ' '
	)
}
for v in "FI_TCP_IFACE tcp" "FI_TCP_IFACE tcp;ofi_rxm" "FI_UDP_IFACE udp"; do
	set -- $v
	theirs=$(domains "" "$1" "$2")
	ours=$(domains "$OXI_LIB" "$1" "$2")
	all=$(LD_LIBRARY_PATH=$OXI_LIB FI_SOCKETS_IFACE= timeout 30 fi_info -p "$2" 2>/dev/null | awk '/domain:/ { print $2 }' | sort -u | tr '\n' ' ')
	if [ "$ours" = "lo " ] && [ "$theirs" = "$ours" ] && [ "$all" != "lo " ]; then
		echo "ok: $1=lo -p $2 lists only lo (without it: $all)"
	else
		echo "FAIL: $1=lo -p $2: ours lists '$ours', Debian's '$theirs', ours without it '$all'"; fail=1
	fi
done

export LD_LIBRARY_PATH=$OXI_LIB
pingpong tcp-msg msg 127.0.0.1 -p tcp
pingpong tcp-rxm rdm 127.0.0.1 -p "tcp;ofi_rxm"
pingpong udp dgram 127.0.0.1 -p udp
pingpong udp-rxd rdm 127.0.0.1 -p "udp;ofi_rxd"
FI_PROVIDER=tcp pingpong env-tcp rdm 127.0.0.1

exe=$OXI_WORK/mpi_suite_names
mpicc -O2 -Wall -Wextra -Werror -o "$exe" "$OXI_ROOT/fabtests-compat/mpi/mpi_suite.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
out=$OXI_WORK/mpi-names.out
if timeout 300 mpirun -np 2 -x LD_LIBRARY_PATH -x FI_SOCKETS_IFACE --mca oob_tcp_if_include lo \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp --mca mtl_ofi_verbose 1 "$exe" >"$out" 2>&1 &&
	grep -q "mpi (2 ranks): 22 passed, 0 failed" "$out"; then
	echo "ok: Open MPI mtl ofi, mtl_ofi_provider_include tcp: $(grep 'mpi (2 ranks)' "$out")"
	grep -q 'mtl:ofi:prov: tcp;ofi_rxm' "$out" || { echo "FAIL: Open MPI did not pick tcp;ofi_rxm"; fail=1; }
else
	cat "$out"; echo "FAIL: Open MPI with mtl_ofi_provider_include tcp"; fail=1
fi
exit $fail
