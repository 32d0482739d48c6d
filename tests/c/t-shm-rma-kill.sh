#!/usr/bin/env bash
# One-sided operations in flight to a shm peer killed with -9: the
# initiator gets an error completion naming the peer for each (write,
# read, fetching atomic) within a bounded time, and a later write fails.
set -u
exe=$OXI_WORK/shmrmakill
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/shmrmakill.c" -L"$OXI_LIB" -lfabric || exit 1
export LD_LIBRARY_PATH=$OXI_LIB
. "$OXI_ROOT/tests/c/procs-lib.sh"
svc=shm-rma-kill-$$
log=$OXI_WORK/shmrmakill-$$
timeout 60 "$exe" target "$svc" >"$log.target" 2>&1 &
target=$!
wait_line "$log.target" READY || exit 1
timeout 60 "$exe" initiator "$svc" >"$log.initiator" 2>&1 &
initiator=$!
fail=0
if wait_line "$log.target" STOPPED && wait_line "$log.initiator" SENDING; then
	# $target is timeout(1); the endpoint is its child.
	kill -9 $(pgrep -P "$target") 2>/dev/null
else
	fail=1
fi
if wait "$initiator" && [ $fail -eq 0 ]; then
	grep -h 'initiator:' "$log.initiator"
else
	echo FAIL; cat "$log.initiator" "$log.target"
	fail=1
fi
kill -9 $(pgrep -P "$target") "$target" 2>/dev/null
wait 2>/dev/null
exit $fail
