#!/usr/bin/env bash
# `make check-verbs`: the verbs binding's tests.
#  1. prepare the soft-RoCE guest if needed (packages, cached kernel and
#     initramfs: prepare.sh);
#  2. on the host: the binding's Rust tests, with the layout check against
#     the installed <infiniband/verbs.h> made mandatory;
#  3. on the host, the provider without rdma-core (no-rdma-core.sh: the
#     libraries hidden in a mount namespace);
#  4. one guest boot running guest.sh, whose results are summarised here as
#     "verbs-guest: N passed, N failed" (needs build/lib from `make`).
# Outputs: build/verbs-guest/ (the guest's writable work folder).
# Exit status: non-zero when anything failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cargo=${CARGO:-cargo}
work=$root/build/verbs-guest

"$here/prepare.sh" >/dev/null || { echo "verbs-guest: preparing the guest failed" >&2; exit 1; }

mkdir -p "$root/build"
OXI_REQUIRE_VERBS_H=1 "$cargo" test -q -p oxifabric-verbs >"$root/build/verbs-host-tests.log" 2>&1
host=$?
if [ $host = 0 ]; then
	echo "verbs-host: binding tests passed (layout vs verbs.h, no-libibverbs probe)"
else
	tail -30 "$root/build/verbs-host-tests.log" >&2
	echo "verbs-host: binding tests FAILED (build/verbs-host-tests.log)"
fi

# No rdma-core: the provider is listed, has no entries, changes nothing.
"$here/no-rdma-core.sh"
nolib=$?

"$cargo" build -q -p oxifabric-verbs --bins || exit 1
bins=${CARGO_TARGET_DIR:-$root/target}/debug
rm -rf "$work"
mkdir -p "$work"
# The guest sees the host root with tmpfs over /tmp, /root, /run and
# /var/tmp, so a checkout there is invisible to it: what it runs is copied
# into the work folder, which it mounts at the same path wherever it is.
cp "$bins/verbs-probe" "$bins/verbs-rc-pingpong" "$here/guest.sh" "$work/" || exit 1
mkdir -p "$work/lib"
cp -L "$root/build/lib/libfabric.so.1" "$work/lib/libfabric.so.1" || exit 1
# The fabtests-compat programs the guest runs, built as fabtests-compat/run
# builds them.
mkdir -p "$work/ft"
for t in functional/fi_msg functional/fi_cm_data functional/fi_msg_epoll functional/fi_inject_test \
	functional/fi_rdm functional/fi_rdm_tagged_peek functional/fi_unexpected_msg functional/fi_cq_data \
	functional/fi_multi_recv functional/fi_av_xfer functional/fi_shared_ctx benchmarks/fi_msg_pingpong benchmarks/fi_rma_bw benchmarks/fi_rdm_tagged_pingpong \
	functional/fi_rma functional/fi_rma_badaccess functional/fi_multi_mr functional/fi_rdm_rma_event \
	functional/fi_rdm_atomic; do
	gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft/${t#*/}" \
		"$root/fabtests-compat/$t.c" -L"$root/build/lib" -lfabric -lm || exit 1
done
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft/msg_check" \
	"$here/msg_check.c" -L"$root/build/lib" -lfabric || exit 1
# Shared receive contexts: srx_check (on fabtests-compat's shared.h); it
# and fi_shared_ctx also linked against Debian's libfabric (ft-deb), for
# the upstream runs the guest reports as info lines.
mkdir -p "$work/ft-deb"
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -I"$root/fabtests-compat/functional" \
	-o "$work/ft/srx_check" "$here/srx_check.c" -L"$root/build/lib" -lfabric -lm || exit 1
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -I"$root/fabtests-compat/functional" \
	-o "$work/ft-deb/srx_check" "$here/srx_check.c" -lfabric -lm || exit 1
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft-deb/fi_shared_ctx" \
	"$root/fabtests-compat/functional/fi_shared_ctx.c" -lfabric -lm || exit 1
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft/cache_fault_check" \
	"$here/cache_fault_check.c" -L"$root/build/lib" -lfabric || exit 1
# fabtests-compat programs run on both libraries (ours counted, Debian's
# as info lines), also in ft-deb: Debian-linked, ours replaces it through
# LD_LIBRARY_PATH.
units="fi_getinfo_test fi_av_test fi_cq_test fi_cntr_test fi_dom_test fi_eq_test fi_mr_test"
for t in functional/fi_cq_data functional/fi_rma functional/fi_rdm_atomic functional/fi_rma_badaccess \
	functional/fi_killed_peer functional/fi_unexpected_msg $(printf 'unit/%s ' $units); do
	gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft-deb/${t#*/}" \
		"$root/fabtests-compat/$t.c" -lfabric -lm || exit 1
done
# RMA on RDM: the one-sided programs main's list above leaves out, also
# linked against Debian's libfabric, for upstream's verbs;ofi_rxm (info
# lines).
for t in functional/fi_multi_mr functional/fi_rdm_rma_event benchmarks/fi_rma_bw; do
	gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft-deb/${t#*/}" \
		"$root/fabtests-compat/$t.c" -lfabric -lm || exit 1
done
# Issue 24: triggered operations and deferred work, a killed peer,
# three processes at once and collectives on verbs;ofi_rxm: fabtests-compat programs
# linked against Debian's libfabric (run on both libraries), with
# multinode.sh and the port finder it uses beside them.
for t in functional/fi_rdm_rma_trigger functional/fi_rdm_trigger_work functional/fi_multinode functional/fi_multinode_coll; do
	gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft-deb/${t#*/}" \
		"$root/fabtests-compat/$t.c" -lfabric -lm || exit 1
done
mkdir -p "$work/mn"
cp "$root/fabtests-compat/multinode.sh" "$root/fabtests-compat/free-ports.py" "$work/mn/" || exit 1
# Open MPI's ofi MTL over the verbs RDM endpoint (issue 24): the MPI
# suite of fabtests-compat, built with Debian's mpicc (make deps installs
# it; without it the guest reports the check failed).
command -v mpicc >/dev/null && mpicc -O2 -Wall -Wextra -Werror -o "$work/ft/mpi_suite" \
	"$root/fabtests-compat/mpi/mpi_suite.c"
# FI_DELIVERY_COMPLETE on RDM (issue 24): delivery_check (on
# fabtests-compat's shared.h), and Open MPI's one-sided suite for osc rdma
# over btl ofi (built with Debian's mpicc; without it the guest reports
# the check failed).
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -I"$root/fabtests-compat/functional" \
	-o "$work/ft/delivery_check" "$here/delivery_check.c" -L"$root/build/lib" -lfabric -lm || exit 1
command -v mpicc >/dev/null && mpicc -O2 -Wall -Wextra -Werror -o "$work/ft/mpi_onesided" \
	"$root/fabtests-compat/mpi/mpi_onesided.c"
# Rendezvous for large messages on RDM (issue 24): rndv_check (on
# fabtests-compat's shared.h) and fi_rdm_tagged_bw, linked against
# Debian's libfabric (run on both libraries).
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -I"$root/fabtests-compat/functional" \
	-o "$work/ft-deb/rndv_check" "$here/rndv_check.c" -lfabric -lm || exit 1
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft-deb/fi_rdm_tagged_bw" \
	"$root/fabtests-compat/benchmarks/fi_rdm_tagged_bw.c" -lfabric -lm || exit 1
# Flow control and FI_FENCE on RDM (issue 24): flow_check and
# fence_check (on fabtests-compat's shared.h), linked against Debian's
# libfabric (run on both libraries).
for t in flow_check fence_check; do
	gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -I"$root/fabtests-compat/functional" \
		-o "$work/ft-deb/$t" "$here/$t.c" -lfabric -lm || exit 1
done
# Connections of RDM endpoints (issue 24): conn_check (crossing requests,
# a restarted peer), linked against Debian's libfabric (run on both).
gcc -std=c99 -O1 -g -Wall -Wextra -Werror -I"$root/include" -o "$work/ft-deb/conn_check" \
	"$here/conn_check.c" -lfabric || exit 1
printf 'PROBE=%q\nPINGPONG=%q\nOXILIB=%q\nFT=%q\nFTDEB=%q\nUNITS=%q\n' "$work/verbs-probe" \
	"$work/verbs-rc-pingpong" "$work/lib" "$work/ft" "$work/ft-deb" "$units" >"$work/guest.env"
# The guest runs some seventy server/client pairs, three-rank multinode
# runs and Open MPI (6 min or more under TCG, 16 to 20 min on a host
# loaded by other guests): allow for it.
OXI_VM_TIMEOUT=${OXI_VM_TIMEOUT:-1800} "$here/run.sh" "$work" "$work/guest.sh"
rc=$?
passed=$(grep -c '^ok ' "$work/results.txt" 2>/dev/null)
failed=$(grep -c '^FAIL ' "$work/results.txt" 2>/dev/null)
grep '^FAIL ' "$work/results.txt" 2>/dev/null
tail -1 "$work/console.log"
if [ $rc != 0 ] && [ "${failed:-0}" = 0 ]; then
	# The guest did not get to report (timeout 124, no status 125, boot failure).
	echo "verbs-guest: the guest run failed (rc=$rc); see $work/console.log"
	failed=1
fi
echo "verbs-guest: ${passed:-0} passed, ${failed:-0} failed"
[ $host = 0 ] && [ $nolib = 0 ] && [ "${failed:-0}" = 0 ]
