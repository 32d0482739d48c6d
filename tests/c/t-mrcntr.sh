#!/usr/bin/env bash
# A counter bound only to a memory region, waited on alone under manual
# progress (what upstream's fi_multi_mr does), on sockets (over TCP and by
# its same-host path) and shm: the wait drives the domain's endpoints.
# Upstream's sockets passes it only with auto progress (mrcntr.c says why).
set -u
exe=$OXI_WORK/mrcntr
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/mrcntr.c" -L"$OXI_LIB" -lfabric || exit 1
export LD_LIBRARY_PATH=$OXI_LIB
fail=0
for run in "sockets" "sockets FI_SOCKETS_SHM=0" "shm" "sockets auto"; do
	set -- $run
	prov=$1; shift
	mode=; [ "${1:-}" = auto ] && { mode=auto; shift; }
	env "$@" timeout 60 "$exe" "$prov" $mode || { echo "FAIL: $run"; fail=1; }
done
exit $fail
