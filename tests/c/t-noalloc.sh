#!/usr/bin/env bash
# Posting small sends and receives and reading their completions allocates
# nothing once warm (malloc interposed in the test program).
set -eu
exe=$OXI_WORK/noalloc
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/noalloc.c" -L"$OXI_LIB" -lfabric
LD_LIBRARY_PATH=$OXI_LIB timeout 120 "$exe"
