#!/usr/bin/env bash
# Collectives in one process (tests/c/collself.c): bad AV sets, joins and
# collective calls get the documented codes; a group of one runs every
# offered collective with the right data; an endpoint without
# FI_COLLECTIVE answers -FI_ENOSYS. On the sockets RDM endpoint (as
# sockets and tcp) and on shm.
set -eu
exe=$OXI_WORK/collself
gcc -std=c11 -Wall -Wextra -Werror -g -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/collself.c" -L"$OXI_LIB" -lfabric
export LD_LIBRARY_PATH=$OXI_LIB
for p in sockets tcp shm; do
	timeout 60 "$exe" "$p"
done
