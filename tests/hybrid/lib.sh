# Shared by tests/hybrid/t-*.sh (sourced, not a test): counting, building
# and running mesh.c, and reading the sockets provider's path log lines
# (issue 26), which are, at FI_LOG_LEVEL=info:
#   peer <ip>:<port> reached by shared memory
#   peer <ip>:<port> reached by TCP (<reason>)
#   endpoint <ip>:<port> closed: <N> TCP data frames sent, <M> shared-memory messages sent
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
# summary NAME [NOTE]: the test's last line and exit status.
summary() {
	echo "$1: $passed passed, $failed failed${2:+ ($2)}"
	[ "$failed" -eq 0 ]
}
# The path lines exist only in our library; on another one (OXI_HYBRID_LIB)
# the tests run the same traffic and say that they skip them.
ours() { [ "${OXI_HYBRID_OURS:-1}" = 1 ]; }

# build_mesh DIR: compiles mesh.c into DIR (each test its own copy: they
# run in parallel) against our headers and $OXI_LIB; prints its path.
build_mesh() {
	gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$1/mesh" \
		"$OXI_ROOT/tests/hybrid/mesh.c" -L"$OXI_LIB" -lfabric >&2 && echo "$1/mesh"
}

# mesh_run LABEL N [mesh options...]: starts ranks 0..N-1 of $mesh at once,
# rank r bound to ${node[r]} and run under the command prefix ${pre[r]}
# (empty, or "ip netns exec NAME"), each bounded in time; passes if every
# rank printed its "N checks passed" line. The environment is the
# caller's; FI_LOG_LEVEL=info is added so the path lines are written
# (MESH_LOG=debug asks for more).
# Leaves each rank's output (its stderr has the log lines) in
# $run/LABEL.R.log and its endpoint's address in addr[R].
mesh_run() {
	local label=$1 n=$2 dir r pids=() rc all=0
	shift 2
	dir=$(mktemp -d "$OXI_WORK/mesh-xchg.XXXXXX")
	for r in $(seq 0 $((n - 1))); do
		# shellcheck disable=SC2086 # the prefix is words
		${pre[r]:-} env LD_LIBRARY_PATH="$OXI_LIB" FI_LOG_LEVEL=${MESH_LOG:-info} timeout -k 5 75 \
			"$mesh" -n "$n" -r "$r" -d "$dir" -s "${node[r]}" "$@" >"$run/$label.$r.log" 2>&1 &
		pids+=($!)
	done
	for r in $(seq 0 $((n - 1))); do
		wait "${pids[r]}"
		rc=$?
		addr[r]=$(sed -n 's/^mesh: rank [0-9]*: provider .*, address \([^,]*\),.*/\1/p' "$run/$label.$r.log")
		if [ $rc -ne 0 ] || ! grep -q "^mesh: rank $r: [0-9]* checks passed$" "$run/$label.$r.log"; then
			all=1
			echo "  $label rank $r (exit $rc):"
			grep -v '^libfabric:' "$run/$label.$r.log" | sed 's/^/    /'
			grep '^libfabric:.*<\(warn\|error\)>' "$run/$label.$r.log" | tail -5 | sed 's/^/    /'
		fi
	done
	rm -rf "$dir"
	if [ $all -eq 0 ]; then
		local prov per_rank
		prov=$(sed -n 's/^mesh: rank 0: provider \([^,]*\),.*/\1/p' "$run/$label.0.log")
		per_rank=$(sed -n 's/^mesh: rank [0-9]*: \([0-9]*\) checks passed$/\1/p' "$run/$label".*.log | paste -sd' ')
		ok "$label: $n ranks, provider $prov, checks per rank: $per_rank"
	else
		bad "$label: mesh with $n ranks $*"
	fi
}

# literal ADDR: ADDR as an extended regular expression matching itself
# (an address has dots, and brackets around IPv6).
literal() { sed 's/[.]/\\./g; s/\[/\\[/g; s/]/\\]/g' <<<"$1"; }

# path LOG PEER: how this process's log says PEER was reached: shm, tcp,
# none, or several (more than one path line for it).
path() {
	local re shm tcp
	re=$(literal "$2")
	shm=$(grep -cE "::sockets:.*<info> peer $re reached by shared memory$" "$1")
	tcp=$(grep -cE "::sockets:.*<info> peer $re reached by TCP \(.*\)$" "$1")
	case "$shm$tcp" in
	00) echo none ;; 10) echo shm ;; 01) echo tcp ;; *) echo "several (shared memory $shm, TCP $tcp)" ;;
	esac
}

# closed LOG [ADDR]: "N M" from each "endpoint ADDR closed: N TCP data
# frames sent, M shared-memory messages sent" line of LOG (any address if
# ADDR is not given), one line each.
closed() {
	local re='[^ ]*'
	[ -n "${2:-}" ] && re=$(literal "$2")
	sed -nE "s/.*::sockets:.*<info> endpoint $re closed: ([0-9]+) TCP data frames sent, ([0-9]+) shared-memory messages sent$/\1 \2/p" "$1"
}

# expect_path WHO LOG PEER-LABEL PEER WANT: one check of a path line.
expect_path() {
	local got words
	got=$(path "$2" "$4")
	words=$([ "$5" = shm ] && echo "shared memory" || echo "TCP")
	if [ "$got" = "$5" ]; then
		ok "$1 reached $3 ($4) by $words"
	else
		bad "$1 reached $3 ($4): want a 'peer $4 reached by $words' line, the log has: $got"
	fi
}

# expect_no_shm WHO LOG: with FI_SOCKETS_SHM=0, no peer reached by shared
# memory (a "reached by TCP" line is allowed, not required: with the path
# off there is no choice to log; the close line's counts are the proof).
expect_no_shm() {
	if grep -q '::sockets:.*<info> peer .* reached by shared memory$' "$2"; then
		bad "$1 reached a peer by shared memory: $(grep -o 'peer .* reached by shared memory$' "$2" | paste -sd,)"
	else
		ok "$1 reached no peer by shared memory"
	fi
}

# count_is WANT N: WANT is 0 or + (more than zero).
count_is() { if [ "$1" = 0 ]; then [ "$2" -eq 0 ]; else [ "$2" -gt 0 ]; fi; }

# expect_closed WHO LOG ADDR TCP SHM: one check of the close line; TCP and
# SHM are "0" or "+" (more than zero).
expect_closed() {
	local got t m
	got=$(closed "$2" "$3")
	if [ "$(wc -l <<<"$got")" -ne 1 ] || [ -z "$got" ]; then
		bad "$1: want one 'endpoint $3 closed: N TCP data frames sent, M shared-memory messages sent' line, found $([ -n "$got" ] && paste -sd, <<<"$got" || echo none)"
		return
	fi
	read -r t m <<<"$got"
	if count_is "$4" "$t" && count_is "$5" "$m"; then
		ok "$1: $t TCP data frames, $m shared-memory messages sent"
	else
		bad "$1: $t TCP data frames, $m shared-memory messages sent; want $([ "$4" = 0 ] && echo 0 || echo "> 0") and $([ "$5" = 0 ] && echo 0 || echo "> 0")"
	fi
}
