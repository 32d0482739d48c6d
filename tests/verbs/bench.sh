#!/usr/bin/env bash
# `make bench-verbs` (not part of `make check`): in one boot of the
# soft-RoCE guest, fabtests-compat's fi_msg_pingpong and fi_rma_bw -e msg
# on rxe0, and fi_rdm_tagged_pingpong, fi_rdm_tagged_bw and fi_rma_bw -e rdm
# (verbs;ofi_rxm), each run against our library and against Debian's
# (upstream's verbs provider), printed as ratios only: the emulated CPU makes absolute
# numbers meaningless. The programs are compiled with our headers and
# linked against Debian's libfabric, so each binary binds to symbol
# versions both libraries export.
# Output: one line per size, "bench PROGRAM SIZE: latency ours/upstream R
# (usec/xfer A vs B), bandwidth ours/upstream R", then one line per target
# of issue 24 for the RDM rows ("target ...: met" or "missed"); logs in
# build/verbs-bench/.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$root/build/verbs-bench
"$here/prepare.sh" >/dev/null || { echo "bench-verbs: preparing the guest failed" >&2; exit 1; }
[ -e "$root/build/lib/libfabric.so.1" ] || { echo "bench-verbs: run make first" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work/lib" "$work/ft"
cp -L "$root/build/lib/libfabric.so.1" "$work/lib/" || exit 1
for t in fi_msg_pingpong fi_rma_bw fi_rdm_tagged_pingpong fi_rdm_tagged_bw; do
	gcc -std=c99 -O2 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft/$t" \
		"$root/fabtests-compat/benchmarks/$t.c" -lfabric -lm || exit 1
done
cp "$here/bench-guest.sh" "$work/" || exit 1
OXI_VM_TIMEOUT=${OXI_VM_TIMEOUT:-900} "$here/run.sh" "$work" "$work/bench-guest.sh"
rc=$?
cat "$work/ratios.txt" 2>/dev/null
[ $rc = 0 ] || echo "bench-verbs: the guest run failed (rc=$rc); see $work/console.log"
exit $rc
