#!/usr/bin/env bash
# The mixed job of issue 26: three processes of tests/hybrid/mesh.c (all-
# to-all tagged traffic 8 B-1 MiB, fi_inject, RMA writes and reads,
# FI_SUM atomics, FI_SOURCE checked, every transfer data-checked), ranks 0
# and 1 in network namespace A, rank 2 in namespace B, joined by a veth
# pair that carries the only addresses (10.226.0.1 and .2; lo is up but
# unused). Made here with `ip netns` under names holding $$, removed on
# exit.
#
# On our library, with FI_LOG_LEVEL=info, each rank's log must say how it
# reached each peer: 0 and 1 by shared memory (same kernel, IPC and
# network namespace, user), everything across the namespaces by TCP;
# and its close line must show both transports used under one endpoint
# (ranks 0 and 1: TCP data frames to rank 2 and shared-memory messages to
# each other; rank 2: TCP only). With FI_SOCKETS_SHM=0 no rank may log a
# peer reached by shared memory, and every close line must show zero
# shared-memory messages.
#
# Runs with -p sockets and -p "tcp;ofi_rxm" (the latter not on Debian's
# libfabric 1.17, whose tcp;ofi_rxm has no FI_ATOMIC), at API 1.17.
set -u
. "$OXI_ROOT/tests/hybrid/lib.sh"
command -v ip >/dev/null || { bad "ip(8) missing (iproute2)"; summary hybrid-mesh; exit; }
run=$(mktemp -d "$OXI_WORK/t-mesh.XXXXXX")
mesh=$(build_mesh "$run") || { bad "build of mesh.c"; summary hybrid-mesh; exit; }
ns_a=oxihyb-$$-a ns_b=oxihyb-$$-b veth_a=oxh$$a veth_b=oxh$$b
ip_a=10.226.0.1 ip_b=10.226.0.2
cleanup() {
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
	# Kept when a check failed: the ranks' logs say why.
	[ "$failed" -ne 0 ] || rm -rf "$run"
}
trap cleanup EXIT
if ! { ip netns add "$ns_a" && ip netns add "$ns_b" &&
	ip link add "$veth_a" type veth peer name "$veth_b" &&
	ip link set "$veth_a" netns "$ns_a" && ip link set "$veth_b" netns "$ns_b" &&
	ip -n "$ns_a" addr add "$ip_a/24" dev "$veth_a" && ip -n "$ns_b" addr add "$ip_b/24" dev "$veth_b" &&
	ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
	ip -n "$ns_a" link set "$veth_a" up && ip -n "$ns_b" link set "$veth_b" up; }; then
	bad "cannot make the namespaces and veth pair (needs CAP_NET_ADMIN)"
	summary hybrid-mesh
	exit
fi
pre=("ip netns exec $ns_a" "ip netns exec $ns_a" "ip netns exec $ns_b")
node=("$ip_a" "$ip_a" "$ip_b")
# The namespaces hold only lo and the veth; the node chooses the address.
unset FI_SOCKETS_IFACE
who=("rank 0 (namespace A)" "rank 1 (namespace A)" "rank 2 (namespace B)")

# check_paths LABEL: the path lines of the default run.
check_paths() {
	local l=$1 r
	for r in 0 1; do
		expect_path "$l: ${who[r]}" "$run/$l.$r.log" "${who[1 - r]}" "${addr[1 - r]}" shm
		expect_path "$l: ${who[r]}" "$run/$l.$r.log" "${who[2]}" "${addr[2]}" tcp
		expect_closed "$l: ${who[r]}" "$run/$l.$r.log" "${addr[r]}" + +
	done
	for r in 0 1; do
		expect_path "$l: ${who[2]}" "$run/$l.2.log" "${who[r]}" "${addr[r]}" tcp
	done
	expect_closed "$l: ${who[2]}" "$run/$l.2.log" "${addr[2]}" + 0
}

# check_off LABEL: FI_SOCKETS_SHM=0: no shared memory anywhere.
check_off() {
	local l=$1 r
	for r in 0 1 2; do
		expect_no_shm "$l: ${who[r]}" "$run/$l.$r.log"
		expect_closed "$l: ${who[r]}" "$run/$l.$r.log" "${addr[r]}" + 0
	done
}

provs=(sockets "tcp;ofi_rxm")
ours || provs=(sockets)
for p in "${provs[@]}"; do
	l=${p%%;*}$([ "$p" != sockets ] && echo -rxm)
	if mesh_run "$l" 3 -p "$p"; then
		if ours; then check_paths "$l"; fi
	fi
	if ours; then
		FI_SOCKETS_SHM=0 mesh_run "$l-shm0" 3 -p "$p" && check_off "$l-shm0"
	fi
done
ours || echo "skipped: the path log lines and FI_SOCKETS_SHM=0 (ours only), -p \"tcp;ofi_rxm\" (Debian's has no FI_ATOMIC)"
summary hybrid-mesh "$(ours || echo "not our library: path log checks skipped")"
