#!/usr/bin/env bash
# Open MPI 4.1 (Debian's, unmodified) over the shm provider, 2 and 4 ranks
# on this host, FI_PROVIDER=shm so nothing else can carry the traffic:
#  - the MPI suite (fabtests-compat/mpi/mpi_suite.c: point-to-point
#    0 B..64 MiB with data checks, ANY_SOURCE/ANY_TAG, probes, cancel,
#    10000 outstanding messages, collectives) through the ofi MTL
#    (--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include shm);
#  - the one-sided suite (fabtests-compat/mpi/mpi_onesided.c) through
#    osc rdma over btl ofi on shm (--mca btl ofi,self --mca osc rdma
#    --mca btl_ofi_provider_include shm), point-to-point as above.
#
# Upstream's shm (Debian's libfabric 1.17) fails both: Open MPI 4.1's ofi
# MTL asks fi_getinfo for FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM |
# FI_DIRECTED_RECV and upstream's shm, which lacks FI_REMOTE_COMM,
# returns nothing ("select_ofi_provider: no provider found", "PML cm
# cannot be selected"). (With --mca pml ob1 instead, the one-sided suite
# on upstream's shm dies with SIGSEGV in mca_pml_ob1_isend during
# MPI_Win_allocate.)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export LD_LIBRARY_PATH=$OXI_LIB FI_PROVIDER=shm
passed=0 failed=0
mpicc -O2 -Wall -Wextra -Werror -o "$OXI_WORK/mpi_suite" "$OXI_ROOT/fabtests-compat/mpi/mpi_suite.c" &&
	mpicc -O2 -Wall -Wextra -Werror -o "$OXI_WORK/mpi_onesided" "$OXI_ROOT/fabtests-compat/mpi/mpi_onesided.c" ||
	{ echo "FAIL: mpicc"; exit 1; }
mtl=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include shm)
osc=(--mca btl ofi,self --mca osc rdma --mca btl_ofi_provider_include shm)
# run NAME NPROCS WANT-REGEX MCA... -- PROGRAM
run() {
	local name=$1 n=$2 want=$3 out
	shift 3
	out=$OXI_WORK/mpi-$name-$n.out
	if timeout 300 mpirun -np "$n" -x LD_LIBRARY_PATH -x FI_PROVIDER --mca oob_tcp_if_include lo "$@" >"$out" 2>&1 &&
		grep -Eq "$want" "$out"; then
		echo "ok: $name, $n ranks: $(grep -E "$want" "$out" | tail -1)"
		passed=$((passed + 1))
	else
		echo "FAIL: $name, $n ranks (mpirun $*): want a line matching '$want'"
		grep -v '^\s*$' "$out" | tail -25 | sed 's/^/    /'
		failed=$((failed + 1))
	fi
}
for n in 2 4; do
	run suite "$n" "mpi \($n ranks\): 22 passed, 0 failed" "${mtl[@]}" "$OXI_WORK/mpi_suite"
	run onesided "$n" "mpi one-sided \($n ranks\): [0-9]+ passed, 0 failed" "${mtl[@]}" "${osc[@]}" "$OXI_WORK/mpi_onesided"
done
echo "shm-mpi: $passed passed, $failed failed"
[ $failed -eq 0 ]
