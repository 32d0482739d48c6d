#!/usr/bin/env bash
# A shm peer killed with SIGKILL while a large and many small messages to
# it are in flight (tests/shm/killpeer.c): the survivor's sends all end,
# the large ones as error completions with a connection error whose
# fi_cq_strerror text names the dead peer, within 5 s; a new send to the
# dead peer fails at once; a new pair started afterwards exchanges its
# first message within 2 s; and nothing is left behind in /dev/shm, /tmp
# or /var/tmp. Everything runs in a private mount namespace with fresh
# tmpfs mounts on those three directories, so their listings before and
# after hold only what these processes made (other tests running at the
# same time cannot add to them, and nothing leaks onto the host).
#
# Upstream's shm (Debian's libfabric 1.17) fails it: the two large sends
# to the killed peer never complete (no error completion within 10 s), a
# new send to it answers -FI_EAGAIN for ever, and the victim's segment
# (/dev/shm/<pid>:0:0) stays behind; the new pair works.
set -u
if [ "${OXI_KILLPEER_NS:-}" != 1 ]; then
	exe=$OXI_WORK/shm-killpeer
	gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$OXI_ROOT/include" -o "$exe" "$OXI_ROOT/tests/shm/killpeer.c" \
		-L"$OXI_LIB" -lfabric || { echo "FAIL: build of killpeer.c"; exit 1; }
	command -v unshare >/dev/null || { echo "FAIL: unshare(1) missing (util-linux)"; exit 1; }
	OXI_KILLPEER_NS=1 exec unshare --mount --propagation private bash "$0" "$exe"
fi
exe=$1
. "$OXI_ROOT/tests/c/procs-lib.sh"
export LD_LIBRARY_PATH=$OXI_LIB
work=$(mktemp -d "$OXI_WORK/killpeer.XXXXXX")
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
dirs=(/dev/shm /tmp /var/tmp)
# A checkout under one of them (a CI clone in /tmp) stays visible: it is
# bind-mounted aside first and back onto its own path in the fresh tmpfs,
# and left out of the listings (with the directories above it there).
saved=
for d in "${dirs[@]}"; do
	case $OXI_ROOT/ in "$d"/*)
		saved=$(mktemp -d /run/oxi-killpeer.XXXXXX) && mount --bind "$OXI_ROOT" "$saved" ||
			{ echo "FAIL: cannot keep the checkout ($OXI_ROOT) visible"; exit 1; } ;;
	esac
done
cleanup() { [ -n "$saved" ] && { umount "$saved" 2>/dev/null; rmdir "$saved" 2>/dev/null; }; }
trap cleanup EXIT
for d in "${dirs[@]}"; do
	mount -t tmpfs "oxi-killpeer" "$d" || { echo "FAIL: cannot mount a private tmpfs on $d"; exit 1; }
	case $OXI_ROOT/ in "$d"/*)
		mkdir -p "$OXI_ROOT" && mount --bind "$saved" "$OXI_ROOT" ||
			{ echo "FAIL: cannot put the checkout back at $OXI_ROOT"; exit 1; } ;;
	esac
done
# The checkout's own path and the directories above it are not ours to count.
above() { local p=$OXI_ROOT; while [ "$p" != / ]; do p=$(dirname "$p"); for d in "${dirs[@]}"; do
	case $p/ in "$d"/?*) echo "$d: ${p#"$d"/}" ;; esac; done; done; }
listing() {
	for d in "${dirs[@]}"; do find "$d" -mindepth 1 \( -path "$OXI_ROOT" -prune \) -o -printf "$d: %P\n"; done |
		grep -vxF -e "$(above)" -e '#none#' | sort
}
before=$(listing)

"$exe" victim "$work" >"$work/victim.log" 2>&1 &
victim=$!
trap 'kill -9 $victim 2>/dev/null; cleanup' EXIT
timeout 60 "$exe" survivor "$work" >"$work/survivor.log" 2>&1 &
survivor=$!
if wait_line "$work/victim.log" READY; then
	if wait_line "$work/survivor.log" SENDING; then
		kill -9 $victim
		wait $victim 2>/dev/null
		ok "victim killed mid-transfer ($(grep -m1 'sends posted' "$work/survivor.log"))"
	else
		bad "the survivor never started sending"
	fi
	if wait $survivor; then
		ok "survivor: $(grep -h '^survivor:' "$work/survivor.log" | tail -n +2 | tr '\n' ' ')"
	else
		bad "survivor (exit status $?):"
		sed 's/^/    /' "$work/survivor.log"
	fi
else
	bad "the victim never connected to the survivor:"
	sed 's/^/    victim: /' "$work/victim.log"
	kill -9 $survivor 2>/dev/null
	sed 's/^/    survivor: /' "$work/survivor.log"
fi
kill -9 $victim 2>/dev/null

# A new pair, at once.
timeout 30 "$exe" server "$work" >"$work/server.log" 2>&1 &
server=$!
timeout 30 "$exe" client "$work" >"$work/client.log" 2>&1
crc=$?
wait $server
src=$?
if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
	ok "a new pair after the kill: $(grep -h 'first round trip' "$work/client.log")"
else
	bad "a new pair after the kill (server exit $src, client exit $crc):"
	sed 's/^/    server: /' "$work/server.log"
	sed 's/^/    client: /' "$work/client.log"
fi

after=$(listing)
if [ "$before" = "$after" ]; then
	ok "nothing left in ${dirs[*]}"
else
	bad "left behind in ${dirs[*]}:"
	diff <(echo "$before") <(echo "$after") | sed -n 's/^> /    /p'
fi
rm -rf "$work"
echo "shm-killpeer: $passed passed, $failed failed"
[ $failed -eq 0 ]
