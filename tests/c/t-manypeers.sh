#!/usr/bin/env bash
# 512 RDM peer endpoints (in 4 processes) connect to one hub endpoint,
# exchange data-checked tagged messages with it and close cleanly: the
# many-peer scale test of fabtests-compat/benchmarks/fi_rdm_many_peers.
set -eu
exe=$OXI_WORK/fi_rdm_many_peers
src=$OXI_ROOT/fabtests-compat/benchmarks
gcc -std=c99 -O2 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$src/fi_rdm_many_peers.c" \
	-L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
peers=512 per=128
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=$OXI_WORK/manypeers
mkdir -p "$log"
timeout 120 "$exe" -p sockets -s 127.0.0.1 -B "$port" -n $peers -I 20480 -v -T 60 >"$log/hub.out" 2>&1 &
hub=$!
for _ in $(seq 1 200); do grep -q "hub ready" "$log/hub.out" && break; sleep 0.05; done
grep -q "hub ready" "$log/hub.out" || { cat "$log/hub.out"; echo "hub did not start"; exit 1; }
pids=()
for first in $(seq 0 $per $((peers - 1))); do
	timeout 120 "$exe" -p sockets -P "$port" -n $peers -c $per -o "$first" -v -T 60 127.0.0.1 \
		>"$log/peers.$first.out" 2>&1 &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
wait "$hub" || rc=1
cat "$log"/hub.out "$log"/peers.*.out
grep -q "^many_peers peers $peers " "$log/hub.out" || rc=1
[ "$(grep -c 'done$' "$log"/peers.*.out | awk -F: '{s+=$2} END {print s}')" = 4 ] || rc=1
exit $rc
