#!/usr/bin/env bash
# A peer that scribbles over the shared rings (random and plausible words,
# while we poll and send) costs messages, never an access outside the
# shared region: the shm transport's scribbling test, with the receiving
# process (ours) under valgrind's memcheck, which fails the run on any
# invalid read or write. The scribbling child runs natively.
set -eu
cd "$OXI_ROOT"
bin=$(cargo test --no-run -q -p oxifabric-shm --message-format=json 2>/dev/null |
	python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "oxifabric_shm" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["executable"])')
[ -x "$bin" ] || { echo "no test binary of oxifabric-shm"; exit 1; }
log=$OXI_WORK/shm-scribble.vg
if ! valgrind -q --error-exitcode=9 --log-file="$log" "$bin" --exact \
	tests::a_peer_scribbling_over_the_shared_rings_costs_messages_not_memory_safety \
	--nocapture >"$OXI_WORK/shm-scribble.out" 2>&1; then
	cat "$OXI_WORK/shm-scribble.out" "$log"
	echo "FAIL: the scribbling test failed or valgrind reported errors"
	exit 1
fi
grep -q "1 passed" "$OXI_WORK/shm-scribble.out" || { cat "$OXI_WORK/shm-scribble.out"; exit 1; }
grep "scribbled ring:" "$OXI_WORK/shm-scribble.out"
