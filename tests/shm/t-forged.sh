#!/usr/bin/env bash
# A peer that sends well-formed cells that lie (the protocol-level
# hostile peer of issue 25): tests/shm/forged.c, a real shm endpoint
# under valgrind's memcheck, against the `forger` child role of the shm
# crate's test binary (providers/shm/src/forge_tests.rs), which speaks
# the cell protocol (providers/shm/src/proto.rs) through a transport of
# its own and lies in every operation: an unknown one, cells of the wrong
# kind, FIRST without its length or longer than it says, MORE past the
# announced length and for no message, message numbers in use (one a
# rendezvous waiting for a receive that the victim posts late, one a
# rendezvous the victim is copying with the forger, which holds a chunk
# of its split slot: the forger races the victim for that chunk and says
# whether it won; the refusal is counted only then), CHUNKs past its
# bounce area, past a chunk and for no message, FREE of chunks never
# lent, DONE and ANSWER for nothing sent, an ANSWER of the wrong length
# to the victim's read (which must fail) and a second one, answers to its
# large read through a chunk past the forger's area (which must fail) and
# through chunk 0 once that part is gone, rendezvous
# that do not add up (a range that wraps among them) or name memory it
# does not have (unmapped, zero-length ranges), PUSHes at the victim's
# real rendezvous (split slot past the area, stale generation, chunks
# and ranges past the message, chunk size 0 and 1 GiB, memory it does
# not have), and one-sided parts with short or reserved headers, wrong
# keys, bounds past the registration, lengths past the payload,
# malformed ranges and atomics, bytes in chunks past the forger's area
# or past a chunk. The victim must refuse each lie (the
# warn lines "cell from ... refused: WHY", counted here per reason; no
# other refusal may appear), complete exactly the messages the protocol
# lets start, with their announced bytes, and error completions where
# the forger named memory it does not have, nothing on its catch-all
# receives, the forger's honest message intact, its own send once the
# forger ends it honestly, with memcheck clean; the forger checks every
# answer and what the victim wrote into its split slots and buffers (the
# honest PUSH's bytes intact, nothing under the lies). Twice: with
# cross-memory attach, and with FI_SHM_DISABLE_CMA=1 (the victim's large
# send then lends the forger chunks of its bounce area, and the forger's
# rendezvous are answered FALLBACK).
#
# Not applicable to Debian's libfabric 1.17 (OXI_SHM_LIB): the forger
# speaks our cell protocol only.
set -u
if [ "$OXI_LIB" != "$OXI_ROOT/build/lib" ]; then
	echo "shm-forged: 0 passed, 0 failed (not applicable: the forger speaks our protocol only)"
	exit 0
fi
cd "$OXI_ROOT"
bin=$(cargo test --release --no-run -q -p oxifabric-shm --message-format=json 2>/dev/null |
	python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "oxifabric_shm" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["executable"])')
[ -x "$bin" ] || { echo "FAIL: no test binary of oxifabric-shm"; echo "shm-forged: 0 passed, 1 failed"; exit 1; }
exe=$OXI_WORK/shm-forged
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/shm/forged.c" \
	-L"$OXI_LIB" -lfabric || { echo "FAIL: build of forged.c"; exit 1; }

# Refusals each lie must produce: "count reason" (both modes), then the
# ones of the PUSHes at the victim's rendezvous (only with cross-memory
# attach: without it there is no rendezvous to push at).
common='4 a rendezvous that does not add up
1 an operation this endpoint does not know
2 a cell whose kind does not fit its operation
1 a first cell without its length
1 a first cell longer than its message
2 a message longer than announced
1 a cell of a message never started
3 a message number in use
1 a chunk of a message never started
7 a chunk beyond its bounce area
1 a chunk given back that it was not lent
1 an answer to no rendezvous of ours
1 a request for no rendezvous of ours
3 an answer to no part sent to that peer
1 an answer of the wrong length
1 an answer through a chunk it does not have
2 a malformed RMA header
4 an inline part of the wrong length
1 malformed ranges
1 ranges that do not cover the part
1 a chunk index of the wrong length
1 an unknown atomic
1 atomic operands of the wrong length'
pushes='1 a request that does not add up
3 a request that does not fit the message
1 a slot holding chunks past the message'

passed=0 failed=0
run() {
	local what=$1 table=$2 log=$OXI_WORK/forged-$1 rc bad=0 want got total=0 all
	shift 2
	env "$@" FI_LOG_LEVEL=warn LD_LIBRARY_PATH=$OXI_LIB timeout 200 valgrind -q --error-exitcode=99 \
		--log-file="$log.vg" "$exe" "$bin" >"$log.out" 2>"$log.err"
	rc=$?
	cat "$log.out"
	# The second rendezvous under one number is refused only when the
	# forger won the race for a chunk of the first's split slot.
	if grep -q '^forger| forger: won the race' "$log.out"; then
		table=$(sed 's/^3 a message number in use$/4 a message number in use/' <<<"$table")
	fi
	while read -r want reason; do
		got=$(grep -c "refused: $reason\$" "$log.err")
		total=$((total + want))
		if [ "$got" -ne "$want" ]; then
			echo "FAIL: $what: $got refusals \"$reason\", want $want"
			bad=1
		fi
	done <<<"$table"
	all=$(grep -c 'cell from .* refused: ' "$log.err")
	[ "$all" -eq "$total" ] || { echo "FAIL: $what: $all refusals in all, want $total:"; grep 'refused: ' "$log.err" | sed 's/.*refused: //' | sort | uniq -c; bad=1; }
	for denied in "key .*unknown or closed memory key" "outside the registered memory"; do
		grep -q "refused RMA write from .*$denied" "$log.err" || { echo "FAIL: $what: no \"$denied\" line"; bad=1; }
	done
	if [ $rc -eq 0 ] && [ ! -s "$log.vg" ] && [ $bad -eq 0 ] && grep -q '^victim: [0-9]* checks, 0 failed' "$log.out" &&
		grep -q '^forger| forger: [0-9]* checks, 0 failed' "$log.out"; then
		echo "ok: $what: memcheck clean, $all cells refused as expected, every completion as expected"
		passed=$((passed + 1))
	else
		echo "FAIL: $what: exit $rc; memcheck says:"
		head -40 "$log.vg"
		tail -5 "$log.err"
		failed=$((failed + 1))
	fi
}
run cma "$common
$pushes"
run nocma "$common" FI_SHM_DISABLE_CMA=1
echo "shm-forged: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
