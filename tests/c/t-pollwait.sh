#!/usr/bin/env bash
# A blocking CQ wait after busy polling wakes on the message's arrival (the
# polled connection is watched again before the wait sleeps).
set -eu
exe=$OXI_WORK/pollwait
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/pollwait.c" -L"$OXI_LIB" -lfabric -lpthread
LD_LIBRARY_PATH=$OXI_LIB timeout 120 "$exe" sockets
