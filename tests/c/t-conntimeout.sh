#!/usr/bin/env bash
# RDM connection setup retries, bounded by FI_SOCKETS_CONN_TIMEOUT (pinned
# short here): a peer that never listens and a peer killed after a first
# exchange end in error completions after the retries and within the
# bound; a peer that starts late gets its message. fi_info -e lists the
# parameter.
set -u
exe=$OXI_WORK/conntimeout
gcc -std=c99 -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/c/conntimeout.c" -L"$OXI_LIB" -lfabric || exit 1
export LD_LIBRARY_PATH=$OXI_LIB
. "$OXI_ROOT/tests/c/procs-lib.sh"
fail=0
log=$OXI_WORK/conntimeout-$$
trap 'rm -f "$log".*' EXIT

fi_info -e 2>/dev/null | grep -q FI_SOCKETS_CONN_TIMEOUT ||
	{ echo "FAIL: fi_info -e does not list FI_SOCKETS_CONN_TIMEOUT"; fail=1; }

# Nobody ever listens: an error after 400 ms of retries, well before 3 s.
FI_SOCKETS_CONN_TIMEOUT=400 timeout 60 "$exe" send "$(port)" "$(port)" err 350 3000 >"$log.never" 2>&1 ||
	{ echo "FAIL (never-appearing peer)"; cat "$log.never"; fail=1; }
echo "never-appearing peer: $(grep ELAPSED "$log.never")"

# The peer starts once the send is under way (it is refused at first).
mp=$(port); pp=$(port)
FI_SOCKETS_CONN_TIMEOUT=20000 timeout 60 "$exe" send "$mp" "$pp" ok >"$log.late" 2>&1 &
sender=$!
if wait_line "$log.late" SENDING; then
	timeout 60 "$exe" peer "$pp" >"$log.latepeer" 2>&1 &
	peer=$!
	wait "$sender" || { echo "FAIL (late peer)"; cat "$log.late" "$log.latepeer"; fail=1; }
	kill "$peer" 2>/dev/null
else
	fail=1
fi
echo "late peer: $(grep 'sent after' "$log.late")"

# A peer killed after a first message: the next send fails within the bound.
mp=$(port); pp=$(port)
timeout 60 "$exe" peer "$pp" >"$log.victim" 2>&1 &
victim=$!
if wait_line "$log.victim" READY; then
	FI_SOCKETS_CONN_TIMEOUT=400 timeout 60 "$exe" killed "$mp" "$pp" 0 3000 "$log.go" >"$log.killed" 2>&1 &
	sender=$!
	if wait_line "$log.killed" SENT; then
		kill -9 $(pgrep -P "$victim") 2>/dev/null
		wait "$victim" 2>/dev/null
		touch "$log.go"
	fi
	wait "$sender" || { echo "FAIL (killed peer)"; cat "$log.killed"; fail=1; }
	echo "killed peer: $(grep ELAPSED "$log.killed")"
else
	fail=1
fi
kill -9 $(pgrep -P "$victim") "$victim" 2>/dev/null
wait 2>/dev/null
exit $fail
