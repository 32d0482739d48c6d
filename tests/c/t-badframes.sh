#!/usr/bin/env bash
# Malformed frames from a raw TCP peer close that connection only; a
# truncated message touches nothing outside the posted buffer; the endpoint
# keeps working. Run plainly and under valgrind.
set -eu
exe=$OXI_WORK/badframes
gcc -std=c99 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/badframes.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
timeout 60 "$exe"
timeout 300 valgrind -q --error-exitcode=99 "$exe" >"$exe.vg" 2>&1 || { cat "$exe.vg"; exit 1; }
echo "valgrind: clean"
