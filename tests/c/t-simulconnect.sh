#!/usr/bin/env bash
# Simultaneous RDM connects from both sides end as one TCP connection, with
# every message delivered in order. About TCP: the shared-memory path,
# which two endpoints of one host would take, is off.
set -eu
export FI_SOCKETS_SHM=0
exe=$OXI_WORK/simulconnect
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/simulconnect.c" -L"$OXI_LIB" -lfabric
LD_LIBRARY_PATH=$OXI_LIB timeout 60 "$exe"
