#!/usr/bin/env bash
# Two processes on one host take the shared-memory path under the sockets
# provider's RDM endpoint by default and TCP with FI_SOCKETS_SHM=0 (issue
# 26), proven by each process's close line at FI_LOG_LEVEL=info,
# "endpoint <addr> closed: N TCP data frames sent, M shared-memory
# messages sent": by default N = 0 and M > 0 (and the peer "reached by
# shared memory"), with FI_SOCKETS_SHM=0 N > 0 and M = 0 (and no peer
# reached by shared memory; a "reached by TCP" line is not required). Over loopback (FI_SOCKETS_IFACE=lo):
#  - fi_info -e lists FI_SOCKETS_SHM;
#  - tests/hybrid/mesh.c with 2 ranks (tagged, inject, RMA, atomics, data
#    and FI_SOURCE checked) under -p sockets, "tcp;ofi_rxm" and
#    "udp;ofi_rxd" at API 1.17 and -p tcp at API 2.0 (the native 2.x RDM
#    provider);
#  - Debian 12's fi_pingpong -p sockets -e rdm (64 B-1 MiB);
#  - Debian 13's fi_pingpong -p tcp -e rdm, a client built for API 2.1,
#    in the Debian 13 root (tests/trixie/, as tests/c/t-debian13.sh).
# On Debian's libfabric 1.17 (OXI_HYBRID_LIB) only mesh -p sockets and
# Debian 12's fi_pingpong run, without the log checks: its tcp;ofi_rxm
# has no FI_ATOMIC, its udp;ofi_rxd reports source 0 for every peer
# (FI_SOURCE), it has no API 2.0 and FI_SOCKETS_SHM is ours.
set -u
. "$OXI_ROOT/tests/hybrid/lib.sh"
export FI_SOCKETS_IFACE=lo
run=$(mktemp -d "$OXI_WORK/t-path.XXXXXX")
trap '[ "$failed" -ne 0 ] || rm -rf "$run"' EXIT
mesh=$(build_mesh "$run") || { bad "build of mesh.c"; summary hybrid-path; exit; }
pre=("" "")
node=(127.0.0.1 127.0.0.1)

if ours; then
	if LD_LIBRARY_PATH=$OXI_LIB fi_info -e 2>/dev/null | grep -q 'FI_SOCKETS_SHM'; then
		ok "fi_info -e lists FI_SOCKETS_SHM"
	else
		bad "fi_info -e does not list FI_SOCKETS_SHM"
	fi
fi

# mesh_path LABEL [mesh options...]: one default run and one with
# FI_SOCKETS_SHM=0, each checked by the path lines.
mesh_path() {
	local l=$1 r
	shift
	if mesh_run "$l" 2 "$@" && ours; then
		for r in 0 1; do
			expect_path "$l: rank $r" "$run/$l.$r.log" "rank $((1 - r))" "${addr[1 - r]}" shm
			expect_closed "$l: rank $r" "$run/$l.$r.log" "${addr[r]}" 0 +
		done
	fi
	ours || return
	if FI_SOCKETS_SHM=0 mesh_run "$l-shm0" 2 "$@"; then
		for r in 0 1; do
			expect_no_shm "$l-shm0: rank $r" "$run/$l-shm0.$r.log"
			expect_closed "$l-shm0: rank $r" "$run/$l-shm0.$r.log" "${addr[r]}" + 0
		done
	fi
}
mesh_path sockets -p sockets
if ours; then
	mesh_path tcp-rxm -p "tcp;ofi_rxm"
	mesh_path udp-rxd -p "udp;ofi_rxd"
	mesh_path tcp-api2 -p tcp -v 2.0
fi

# counts_are TCP SHM LINES: every "N M" line of LINES has N as TCP, M as
# SHM says (count_is).
counts_are() {
	local t m
	while read -r t m; do
		count_is "$1" "$t" && count_is "$2" "$m" || return 1
	done <<<"$3"
}

# pingpong_path LABEL SHM SERVER-LOG CLIENT-LOG: the path lines of a
# fi_pingpong pair, whose endpoints' addresses are not printed: every close
# line of each process, and no path line contradicting SHM (1: shared
# memory, 0: TCP).
pingpong_path() {
	local l=$1 shm=$2 f got lines want want_t want_m side=server
	shift 2
	ours || return
	if [ "$shm" = 1 ]; then want_t=0 want_m=+ want="N = 0, M > 0"; else want_t=+ want_m=0 want="N > 0, M = 0"; fi
	for f in "$@"; do
		got=$(closed "$f")
		if [ -z "$got" ]; then
			bad "$l $side: no 'endpoint ... closed: N TCP data frames sent, M shared-memory messages sent' line"
		elif counts_are "$want_t" "$want_m" "$got"; then
			ok "$l $side: TCP data frames N, shared-memory messages M: $(paste -sd, <<<"$got")"
		else
			bad "$l $side: TCP data frames N, shared-memory messages M: $(paste -sd, <<<"$got"); want $want"
		fi
		lines=$(grep -o '::sockets:.*<info> peer .* reached by .*' "$f" | sed 's/.*<info> //' | paste -sd,)
		if [ "$shm" = 1 ] && ! grep -q '::sockets:.*<info> peer .* reached by shared memory$' "$f"; then
			bad "$l $side: no peer reached by shared memory (${lines:-no path line})"
		elif grep -q "::sockets:.*<info> peer .* reached by $([ "$shm" = 1 ] && echo TCP || echo "shared memory")" "$f"; then
			bad "$l $side: $lines"
		else
			ok "$l $side: ${lines:-no path line}"
		fi
		side=client
	done
}

# Debian 12's fi_pingpong on the host.
. "$OXI_ROOT/tests/c/pingpong-lib.sh"
for shm in 1 $(ours && echo 0); do
	l=pingpong-deb12$([ $shm = 0 ] && echo -shm0)
	pp=$(PINGPONG_ENV="env LD_LIBRARY_PATH=$OXI_LIB FI_LOG_LEVEL=info $([ $shm = 0 ] && echo FI_SOCKETS_SHM=0)" \
		pingpong "$l" rdm 127.0.0.1 -p sockets; echo "fail=$fail")
	if grep -qx "fail=0" <<<"$pp"; then
		ok "$l: Debian 12's fi_pingpong -p sockets -e rdm ($(grep "^ok: $l:" <<<"$pp" | sed 's/.*(\(.*\))$/\1/'))"
		pingpong_path "$l" $shm "$OXI_WORK/pingpong-$l-$$.srv" "$OXI_WORK/pingpong-$l-$$.srv.cli"
	else
		bad "$l: Debian 12's fi_pingpong -p sockets -e rdm:"
		grep -v '^libfabric:.*<info>' <<<"$pp" | tail -20 | sed 's/^/    /'
	fi
	rm -f "$OXI_WORK/pingpong-$l-$$".srv*
done
ours || echo "skipped on Debian's libfabric: the log checks, FI_SOCKETS_SHM=0, mesh over tcp;ofi_rxm, udp;ofi_rxd and tcp at API 2.0, Debian 13's fi_pingpong"

# Debian 13's fi_pingpong (API 2.1) in its root, private network and
# mount namespace; its logs are copied out for the checks.
if ours; then
	if ! root13=$("$OXI_ROOT/tests/trixie/root.sh"); then
		bad "no Debian 13 root (tests/trixie/root.sh)"
	else
		out=$("$OXI_ROOT/tests/trixie/inroot.sh" "$root13" "$OXI_LIB" "" bash -c '
			. "$OXI_ROOT/tests/c/pingpong-lib.sh"
			for shm in 1 0; do
				l=pingpong-deb13$([ $shm = 0 ] && echo -shm0)
				PINGPONG_ENV="$OXI_CHROOT FI_LOG_LEVEL=info $([ $shm = 0 ] && echo FI_SOCKETS_SHM=0)" pingpong "$l" rdm 127.0.0.1 -p tcp
				cp "$OXI_WORK/pingpong-$l-$$.srv" "$1/$l.srv.log" && cp "$OXI_WORK/pingpong-$l-$$.srv.cli" "$1/$l.cli.log"
				rm -f "$OXI_WORK/pingpong-$l-$$".srv*
			done' inroot "$run" 2>&1)
		for shm in 1 0; do
			l=pingpong-deb13$([ $shm = 0 ] && echo -shm0)
			if grep -q "^ok: $l:" <<<"$out"; then
				ok "$l: Debian 13's fi_pingpong -p tcp -e rdm ($(grep "^ok: $l:" <<<"$out" | sed 's/.*(\(.*\))$/\1/'))"
				pingpong_path "$l" $shm "$run/$l.srv.log" "$run/$l.cli.log"
			else
				bad "$l: Debian 13's fi_pingpong -p tcp -e rdm:"
				sed 's/^/    /' <<<"$out" | grep -v '^    libfabric:.*<info>' | tail -20
			fi
		done
	fi
fi
summary hybrid-path "$(ours || echo "not our library: path log checks skipped")"
