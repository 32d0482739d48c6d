#!/usr/bin/env bash
# Open MPI 4.1 (Debian's, unmodified) one-sided communication through
# osc rdma over btl ofi on our sockets provider (RMA and atomics
# underneath), with 2 and 4 ranks: fence, post/start/complete/wait,
# lock/unlock/flush, lock_all, MPI_Put/MPI_Get up to 4 MiB, MPI_Accumulate,
# MPI_Get_accumulate, MPI_Fetch_and_op, MPI_Compare_and_swap, MPI_Rput/
# MPI_Rget, dynamic windows; every result checked
# (fabtests-compat/mpi/mpi_onesided.c).
set -eu
exe=$OXI_WORK/mpi_onesided
mpicc -O2 -Wall -Wextra -Werror -o "$exe" "$OXI_ROOT/fabtests-compat/mpi/mpi_onesided.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export LD_LIBRARY_PATH=$OXI_LIB
# Loopback only: our provider's interfaces and Open MPI's own channel.
export FI_SOCKETS_IFACE=lo
for n in 2 4; do
	out=$OXI_WORK/mpi-onesided-$n.out
	if ! timeout 300 mpirun -np "$n" -x LD_LIBRARY_PATH -x FI_SOCKETS_IFACE --mca oob_tcp_if_include lo \
		--mca pml cm --mca mtl ofi --mca btl ofi,self --mca osc rdma \
		--mca btl_ofi_provider_include sockets --mca mtl_ofi_provider_include sockets "$exe" >"$out" 2>&1; then
		cat "$out"
		echo "FAIL: mpirun -np $n"
		exit 1
	fi
	grep -Eq "mpi one-sided \($n ranks\): [0-9]+ passed, 0 failed" "$out" || { cat "$out"; exit 1; }
	tail -1 "$out"
done
