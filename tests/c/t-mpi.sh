#!/usr/bin/env bash
# Open MPI 4.1 (Debian's, unmodified) runs fabtests-compat/mpi/mpi_suite.c
# through its ofi MTL on our library's sockets provider, with 2 and 4 ranks:
# point-to-point 0 B..64 MiB with data checks, ANY_SOURCE/ANY_TAG, probes,
# cancel, 10000 outstanding messages, collectives.
set -eu
exe=$OXI_WORK/mpi_suite
mpicc -O2 -Wall -Wextra -Werror -o "$exe" "$OXI_ROOT/fabtests-compat/mpi/mpi_suite.c"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export LD_LIBRARY_PATH=$OXI_LIB
# Loopback only: our provider's interfaces and Open MPI's own channel.
export FI_SOCKETS_IFACE=lo
for n in 2 4; do
	out=$OXI_WORK/mpi-$n.out
	if ! timeout 300 mpirun -np "$n" -x LD_LIBRARY_PATH -x FI_SOCKETS_IFACE --mca oob_tcp_if_include lo --mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include sockets "$exe" >"$out" 2>&1; then
		cat "$out"
		echo "FAIL: mpirun -np $n"
		exit 1
	fi
	grep -q "mpi ($n ranks): 22 passed, 0 failed" "$out" || { cat "$out"; exit 1; }
	tail -1 "$out"
done
