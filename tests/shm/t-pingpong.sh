#!/usr/bin/env bash
# Debian's unmodified fi_pingpong (upstream's binary) with -p shm -e rdm,
# server and client on this host (fi_pingpong swaps the endpoint names over
# its own TCP control socket on 127.0.0.1), with data checks (-c): its
# default sweep (64 B to 1 MiB), the sizes below it (1 B) and around shm's
# inject size (4096, 4097 B), in message and tagged mode. Each pair on a
# free port, bounded in time. Passes on Debian's libfabric 1.17.
set -u
export LD_LIBRARY_PATH=$OXI_LIB
passed=0 failed=0
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# pp LAST OPTIONS...: one pair; LAST is the size label its last line must start with.
pp() {
	local last=$1 p srv out=$OXI_WORK/pingpong-$$-$RANDOM
	shift
	p=$(free_port)
	timeout 60 fi_pingpong -p shm -e rdm -c -B "$p" "$@" >"$out.srv" 2>&1 &
	srv=$!
	for _ in $(seq 1 100); do
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . && break
		sleep 0.05
	done
	if timeout 60 fi_pingpong -p shm -e rdm -c -P "$p" "$@" 127.0.0.1 >"$out.cli" 2>&1 && wait "$srv" &&
		[ "$(grep '^[0-9]' "$out.cli" | tail -1 | cut -d' ' -f1)" = "$last" ]; then
		echo "ok: fi_pingpong -p shm -e rdm -c $* (sizes $(grep '^[0-9]' "$out.cli" | cut -d' ' -f1 | tr '\n' ' '))"
		passed=$((passed + 1))
	else
		echo "FAIL: fi_pingpong -p shm -e rdm -c $* (want a last line for $last)"
		sed 's/^/    client: /' "$out.cli"
		sed 's/^/    server: /' "$out.srv"
		kill "$srv" 2>/dev/null
		failed=$((failed + 1))
	fi
	rm -f "$out.srv" "$out.cli"
}
pp 1m -I 50
pp 1m -I 50 -m tagged
pp 1 -S 1 -I 200
pp 4k -S 4096 -I 100
pp 4k -S 4097 -I 100
pp 1m -S 1048576 -I 20 -m tagged
echo "shm-pingpong: $passed passed, $failed failed"
[ $failed -eq 0 ]
