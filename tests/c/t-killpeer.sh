#!/usr/bin/env bash
# A peer killed mid-transfer (kill -9) on RDM and MSG endpoints: the
# survivor gets an error completion within a bounded time (and on MSG an
# FI_SHUTDOWN event), then keeps talking to another peer.
set -u
exe=$OXI_WORK/killpeer
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/killpeer.c" -L"$OXI_LIB" -lfabric || exit 1
export LD_LIBRARY_PATH=$OXI_LIB
. "$OXI_ROOT/tests/c/procs-lib.sh"
fail=0
for ep in rdm msg; do
	sp=$(port); vp=$(port); gp=$(port)
	log=$OXI_WORK/killpeer-$ep-$$
	timeout 60 "$exe" victim "$ep" "$vp" "$sp" >"$log.victim" 2>&1 &
	victim=$!
	timeout 60 "$exe" good "$ep" "$gp" "$sp" >"$log.good" 2>&1 &
	good=$!
	if [ "$ep" = msg ]; then
		wait_line "$log.victim" LISTENING && wait_line "$log.good" LISTENING || { fail=1; continue; }
	else
		wait_line "$log.victim" READY && wait_line "$log.good" READY || { fail=1; continue; }
	fi
	timeout 60 "$exe" survivor "$ep" "$sp" "$vp" "$gp" >"$log.survivor" 2>&1 &
	survivor=$!
	if wait_line "$log.survivor" SENDING; then
		# $victim is timeout(1); the endpoint is its child.
		kill -9 $(pgrep -P "$victim") 2>/dev/null
	fi
	if wait "$survivor" && wait "$good"; then
		echo "$ep: $(grep -h 'survivor:' "$log.survivor" | tr '\n' ' ')"
	else
		echo "FAIL ($ep)"; cat "$log.survivor" "$log.good" "$log.victim"
		fail=1
	fi
	kill -9 $(pgrep -P "$victim") $(pgrep -P "$good") "$victim" "$good" 2>/dev/null
	wait 2>/dev/null
done
exit $fail
