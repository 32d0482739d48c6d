# Shared by the tests that start several processes of one program
# (sourced, not a test).
# port: a free loopback TCP port.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# wait_line FILE LINE: waits (bounded, 20 s) until FILE has a line starting
# with LINE; prints the file and fails on timeout.
wait_line() {
	for _ in $(seq 1 400); do
		grep -q "^$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "timeout waiting for '$2' in $1"; cat "$1"; return 1
}
