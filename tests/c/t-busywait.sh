#!/usr/bin/env bash
# No busy waits: a receiver blocked in fi_cq_sread with its unexpected
# space full, an auto-progress process computing after a flood, and an
# endpoint whose accept fails with EMFILE each use less than 5% of a core
# over 3 s (CPU time from getrusage).
set -eu
exe=$OXI_WORK/busywait
gcc -std=c99 -O2 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/busywait.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
FI_SOCKETS_MAX_UNEXP_SZ=$((1 << 20)) timeout 120 "$exe"
