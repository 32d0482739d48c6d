#!/usr/bin/env bash
# Debian's fi_pingpong (the upstream binary) runs on our library with the
# sockets provider: MSG, RDM and DGRAM over its default size sweep on
# 127.0.0.1, and RDM once over ::1. Each pair is bounded in time.
set -u
export LD_LIBRARY_PATH=$OXI_LIB
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail=0
run() {
	local ep=$1 addr=$2 extra=${3:-} p out srv
	p=$(port)
	out=$OXI_WORK/pingpong-$ep-$$.srv
	timeout 60 fi_pingpong -p sockets -e "$ep" -B "$p" $extra >"$out" 2>&1 &
	srv=$!
	# The server's control port is ready when it listens.
	for _ in $(seq 1 100); do
		ss -ltn 2>/dev/null | grep -q ":$p " && break
		sleep 0.05
	done
	if timeout 60 fi_pingpong -p sockets -e "$ep" -P "$p" $extra "$addr" >"$out.cli" 2>&1 && wait "$srv"; then
		echo "ok: fi_pingpong -e $ep $extra $addr ($(grep -c '^[0-9]' "$out.cli") sizes)"
		# Every size reported, with matching sent/ack counts.
		if ! grep -q '^1m ' "$out.cli" && [ "$ep" != dgram ]; then
			echo "FAIL: fi_pingpong -e $ep did not reach 1m"; cat "$out.cli"; fail=1
		fi
	else
		echo "FAIL: fi_pingpong -e $ep $extra $addr"
		cat "$out.cli" "$out"
		kill "$srv" 2>/dev/null
		fail=1
	fi
}
run msg 127.0.0.1
run rdm 127.0.0.1
run dgram 127.0.0.1
run rdm ::1 -6
exit $fail
