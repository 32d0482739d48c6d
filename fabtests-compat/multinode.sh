#!/usr/bin/env bash
# multinode.sh PROVIDER NPROCS [EXTRA ARGS...]: starts NPROCS ranks of
# fi_multinode (or of $FT_MULTINODE_BIN) at once on 127.0.0.1 (rank r on
# BASE + r, BASE a run of free ports found here), waits for all (each
# bounded by `timeout`, $FT_MULTINODE_TIMEOUT seconds, default 60), and
# prints each rank's exit code and the last line of its output, then
# "PROGRAM NPROCS: N passed, N failed". Exits 0 only if every rank
# exited 0; 77 if every rank printed SKIP.
#
# With "-m RANK" among the extra arguments, that rank is not started (the
# others check that sends to it fail in bounded time) and counts as passed.
# With "-K RANK", that rank kills itself with SIGKILL on purpose: its exit
# by SIGKILL (137) after a last line "killing myself" counts as passed.
#
# The program is $FT_MULTINODE_BIN, else build/fabtests-compat/fi_multinode
# (built by fabtests-compat/run); any program taking -p PROV -n NPROCS
# -r RANK -B BASEPORT will do (fi_multinode_coll: the collectives). The
# library is whatever LD_LIBRARY_PATH names (unset: the system's). A rank
# that fails shows its last $FT_MULTINODE_TAIL lines (default 15).
set -u
prov=${1:?usage: multinode.sh PROVIDER NPROCS [ARGS...]}
n=${2:?usage: multinode.sh PROVIDER NPROCS [ARGS...]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
bin=${FT_MULTINODE_BIN:-$(dirname "$here")/build/fabtests-compat/fi_multinode}
export FI_SOCKETS_IFACE=${FI_SOCKETS_IFACE:-lo}
[ -x "$bin" ] || { echo "multinode.sh: no program $bin"; exit 2; }

# A base port with NPROCS free TCP and UDP ports after it.
base=$(python3 "$here/free-ports.py" "$n")
[ -n "$base" ] || { echo "multinode.sh: no run of $n free ports"; exit 2; }

missing=-1 killed=-1
prev=
for a in "$@"; do
	[ "$prev" = -m ] && missing=$a
	[ "$prev" = -K ] && killed=$a
	prev=$a
done

logs=$(mktemp -d "${TMPDIR:-/tmp}/multinode.XXXXXX")
holder=
trap 'rm -rf "$logs"; [ -z "$holder" ] || kill "$holder" 2>/dev/null' EXIT
# The left-out rank's ports stay bound (not listening) while the others
# run: their connects are refused as from a peer that never starts, and no
# other test running meanwhile can listen there and receive their retries.
if [ "$missing" -ge 0 ]; then
	python3 - "$((base + missing))" "$logs/held" <<'PY' &
import signal, socket, sys
port, flag = int(sys.argv[1]), sys.argv[2]
held = []
for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", port))
    held.append(s)
open(flag, "w").close()
signal.pause()
PY
	holder=$!
	for _ in $(seq 1 200); do [ -e "$logs/held" ] && break; sleep 0.01; done
	[ -e "$logs/held" ] || { echo "multinode.sh: could not hold port $((base + missing))"; exit 2; }
fi
pids=()
for r in $(seq 0 $((n - 1))); do
	if [ "$r" = "$missing" ]; then
		echo "SKIP: rank $r left out (-m)" >"$logs/$r.log"
		pids+=(0)
		continue
	fi
	timeout "${FT_MULTINODE_TIMEOUT:-60}" "$bin" -p "$prov" -n "$n" -r "$r" -B "$base" "$@" >"$logs/$r.log" 2>&1 &
	pids+=($!)
done
passed=0 failed=0 skipped=0
for r in $(seq 0 $((n - 1))); do
	if [ "$r" = "$missing" ]; then
		passed=$((passed + 1))
		echo "rank $r: not started (-m)"
		continue
	fi
	wait "${pids[$r]}"
	rc=$?
	if [ $rc -eq 137 ] && [ "$r" = "$killed" ] && [ "$(tail -1 "$logs/$r.log")" = "killing myself" ]; then
		rc=0
	fi
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
	elif [ $rc -eq 77 ] && grep -q '^SKIP' "$logs/$r.log"; then
		skipped=$((skipped + 1))
	else
		failed=$((failed + 1))
	fi
	echo "rank $r: exit $rc: $(tail -1 "$logs/$r.log")"
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || sed 's/^/    /' "$logs/$r.log" | tail -"${FT_MULTINODE_TAIL:-15}"
done
echo "$(basename "$bin") $n: $passed passed, $failed failed"
[ $failed -eq 0 ] || exit 1
[ $skipped -eq "$n" ] && exit 77
[ $passed -eq "$n" ]
