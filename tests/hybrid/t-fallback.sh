#!/usr/bin/env bash
# A same-host peer whose shared-memory handshake fails for a reason other
# than its death is reached by TCP instead, without failing anything
# (issue 26, "Faults"). Rank 1 of tests/hybrid/mesh.c runs with the test
# knob OXI_SHM_REFUSE_HANDSHAKES=1: its path listens but fails every
# handshake on its side, as when it is out of descriptors or memory: an
# incoming one after rank 0 found it listening and posted its first
# operations (which wait for the handshake's end), its own at once.
# Expected, under -p sockets and -p "tcp;ofi_rxm":
#  - both ranks pass every mesh check (tagged, inject, RMA, atomics, data
#    and FI_SOURCE);
#  - rank 0 logs "peer <rank 1> reached by TCP (shared-memory handshake
#    failed: ...)", rank 1 "peer <rank 0> reached by TCP (shared memory
#    refused: ...)";
#  - each closes with N > 0 TCP data frames and M = 0 shared-memory
#    messages.
# The knob and the log lines are ours: on another library (OXI_HYBRID_LIB)
# this test says it skips.
set -u
. "$OXI_ROOT/tests/hybrid/lib.sh"
if ! ours; then
	summary hybrid-fallback "skipped: OXI_SHM_REFUSE_HANDSHAKES and the path lines are ours"
	exit
fi
export FI_SOCKETS_IFACE=lo
run=$(mktemp -d "$OXI_WORK/t-fallback.XXXXXX")
trap '[ "$failed" -ne 0 ] || rm -rf "$run"' EXIT
mesh=$(build_mesh "$run") || { bad "build of mesh.c"; summary hybrid-fallback; exit; }
pre=("" "env OXI_SHM_REFUSE_HANDSHAKES=1")
node=(127.0.0.1 127.0.0.1)

for prov in sockets "tcp;ofi_rxm"; do
	l=${prov%%;*}
	mesh_run "$l" 2 -p "$prov" || continue
	expect_path "$l: rank 0" "$run/$l.0.log" "rank 1" "${addr[1]}" tcp
	if grep -qE "<info> peer $(literal "${addr[1]}") reached by TCP \(shared-memory handshake failed: .*\)$" "$run/$l.0.log"; then
		ok "$l: rank 0 says the handshake failed"
	else
		bad "$l: rank 0's TCP line does not say the handshake failed: $(grep -o 'peer .* reached by .*' "$run/$l.0.log" | paste -sd,)"
	fi
	expect_closed "$l: rank 0" "$run/$l.0.log" "${addr[0]}" + 0
	expect_path "$l: rank 1" "$run/$l.1.log" "rank 0" "${addr[0]}" tcp
	expect_closed "$l: rank 1" "$run/$l.1.log" "${addr[1]}" + 0
done
summary hybrid-fallback
