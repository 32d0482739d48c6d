#!/usr/bin/env bash
# RMA frames from a raw TCP peer: refused accesses (unknown key, range past
# the end, wrapped address, read-only region) are answered with FI_EACCES
# and touch no memory; bad or unsolicited RMA frames close that connection
# only; good writes and reads land exactly. Run plainly and under valgrind.
set -eu
exe=$OXI_WORK/badrma
gcc -std=c99 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/badrma.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
timeout 60 "$exe"
timeout 300 valgrind -q --error-exitcode=99 "$exe" >"$exe.vg" 2>&1 || { cat "$exe.vg"; exit 1; }
echo "valgrind: clean"
