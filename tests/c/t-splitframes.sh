#!/usr/bin/env bash
# Runs of bare frames read across a read boundary keep the stream in step
# (the reader restarts its header state after every whole header).
set -eu
exe=$OXI_WORK/splitframes
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/splitframes.c" -L"$OXI_LIB" -lfabric
LD_LIBRARY_PATH=$OXI_LIB timeout 120 "$exe" sockets
LD_LIBRARY_PATH=$OXI_LIB FI_SOCKETS_TX_COALESCE=0 timeout 120 "$exe" sockets
