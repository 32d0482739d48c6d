# Shared by the tests that run Debian's fi_pingpong (sourced, not a test).
# pingpong NAME EP ADDR [fi_pingpong options...]: one server/client pair on
# a free port, bounded in time; prints ok/FAIL and sets fail=1 on failure.
# PINGPONG (default fi_pingpong) and PINGPONG_ENV (a command prefix such as
# a chroot) choose the binary.
fail=0
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pingpong() {
	local name=$1 ep=$2 addr=$3 p out srv
	shift 3
	p=$(free_port)
	out=$OXI_WORK/pingpong-$name-$$.srv
	timeout 60 ${PINGPONG_ENV:-} ${PINGPONG:-fi_pingpong} -e "$ep" -B "$p" "$@" >"$out" 2>&1 &
	srv=$!
	# The server's control port is ready when it listens.
	for _ in $(seq 1 100); do
		ss -ltn 2>/dev/null | grep -q ":$p " && break
		sleep 0.05
	done
	if timeout 60 ${PINGPONG_ENV:-} ${PINGPONG:-fi_pingpong} -e "$ep" -P "$p" "$@" "$addr" >"$out.cli" 2>&1 && wait "$srv"; then
		echo "ok: $name: fi_pingpong -e $ep $* $addr ($(grep -c '^[0-9]' "$out.cli") sizes)"
		# Every size reported (up to 1m for reliable endpoints).
		if ! grep -q '^1m ' "$out.cli" && [ "$ep" != dgram ]; then
			echo "FAIL: $name: fi_pingpong -e $ep did not reach 1m"; cat "$out.cli"; fail=1
		fi
	else
		echo "FAIL: $name: fi_pingpong -e $ep $* $addr"
		cat "$out.cli" "$out"
		kill "$srv" 2>/dev/null
		fail=1
	fi
}
