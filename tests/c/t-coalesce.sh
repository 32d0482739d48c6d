#!/usr/bin/env bash
# Back-to-back sends (which our provider may hold to write together) reach
# the peer while only the receiver's CQ is polled: the auto-progress thread
# writes what the sender's own progress calls would have.
set -eu
exe=$OXI_WORK/coalesce
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/coalesce.c" -L"$OXI_LIB" -lfabric
LD_LIBRARY_PATH=$OXI_LIB timeout 120 "$exe" sockets
LD_LIBRARY_PATH=$OXI_LIB FI_SOCKETS_TX_COALESCE=0 timeout 120 "$exe" sockets
