#!/usr/bin/env bash
# A CQ's FI_GETWAIT descriptor wakes a poll() on arrival with manual
# progress (fi_trywait first, as fi_poll(3) asks).
set -eu
exe=$OXI_WORK/getwait
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/getwait.c" -L"$OXI_LIB" -lfabric -lpthread
LD_LIBRARY_PATH=$OXI_LIB timeout 120 "$exe" sockets
