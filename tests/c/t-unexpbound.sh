#!/usr/bin/env bash
# Memory bounds of the sockets provider with small limits: 10 million
# zero-length frames from a raw peer and 2 million 0-byte tagged messages
# from a libfabric peer keep the receiver's resident memory within
# FI_SOCKETS_MAX_UNEXP_SZ (every message counts a fixed charge, not only
# its bytes); a peer that never reads keeps the sender's inject copies
# within FI_SOCKETS_MAX_INJECT_QUEUE_SZ. Both limits are listed by fi_info -e.
set -eu
exe=$OXI_WORK/unexpbound
gcc -std=c99 -O2 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/unexpbound.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
for p in FI_SOCKETS_MAX_UNEXP_SZ FI_SOCKETS_MAX_INJECT_QUEUE_SZ; do
	fi_info -e | grep -q "^# $p: size_t" || { echo "fi_info -e does not list $p"; exit 1; }
done
FI_SOCKETS_MAX_UNEXP_SZ=$((16 << 20)) timeout 200 "$exe" 10000000 2000000
# The libfabric sender alone (its messages, not the raw ones, fill the queue).
FI_SOCKETS_MAX_UNEXP_SZ=$((16 << 20)) timeout 200 "$exe" 0 2000000
FI_SOCKETS_MAX_INJECT_QUEUE_SZ=$((1 << 20)) timeout 60 "$exe" inject
