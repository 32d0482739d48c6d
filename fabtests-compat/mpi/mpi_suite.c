/*
 * MPI conformance checks run through Open MPI's ofi MTL on oxifabric.
 * Every rank runs every check; each check verifies the data it receives
 * and rank 0 prints one line per check and a summary line
 * "N passed, N failed". Exit status is non-zero on any failure.
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static int passed, failed;

/* Collective verdict: a check passes only if it passed on every rank. */
static void report(const char *name, int ok)
{
	int all = 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	if (all)
		passed++;
	else
		failed++;
	if (rank == 0) {
		printf("%s %s\n", all ? "PASS" : "FAIL", name);
		fflush(stdout);
	}
}

static unsigned char pattern(size_t i, int src, int salt)
{
	return (unsigned char) ((i * 131u) ^ (unsigned) (src * 17) ^ (unsigned) salt);
}

/* Ring exchange of one size: each rank sends to rank+1, receives from rank-1. */
static int p2p_size(size_t n, int salt)
{
	unsigned char *s = malloc(n ? n : 1), *r = malloc(n ? n : 1);
	int to = (rank + 1) % size, from = (rank + size - 1) % size, ok = 1;
	MPI_Request req[2];
	MPI_Status st;
	int count;

	if (!s || !r)
		return 0;
	for (size_t i = 0; i < n; i++)
		s[i] = pattern(i, rank, salt);
	memset(r, 0xee, n ? n : 1);
	MPI_Irecv(r, (int) n, MPI_BYTE, from, salt, MPI_COMM_WORLD, &req[0]);
	MPI_Isend(s, (int) n, MPI_BYTE, to, salt, MPI_COMM_WORLD, &req[1]);
	MPI_Wait(&req[0], &st);
	MPI_Wait(&req[1], MPI_STATUS_IGNORE);
	MPI_Get_count(&st, MPI_BYTE, &count);
	if ((size_t) count != n || st.MPI_SOURCE != from)
		ok = 0;
	for (size_t i = 0; ok && i < n; i++)
		if (r[i] != pattern(i, from, salt))
			ok = 0;
	free(s);
	free(r);
	return ok;
}

static void check_p2p(void)
{
	static const size_t sizes[] = { 0, 1, 7, 64, 1000, 4096, 65536, 1 << 20, 4 << 20, 64 << 20 };
	char name[64];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "p2p %zu bytes", sizes[i]);
		report(name, p2p_size(sizes[i], (int) i + 1));
	}
}

static void check_any_source_tag(void)
{
	int ok = 1;
	if (rank == 0) {
		int seen = 0;
		for (int i = 1; i < size; i++) {
			int v;
			MPI_Status st;
			MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			if (v != st.MPI_SOURCE * 10 || st.MPI_TAG != 100 + st.MPI_SOURCE)
				ok = 0;
			seen |= 1 << st.MPI_SOURCE;
		}
		if (seen != ((1 << size) - 2))
			ok = 0;
	} else {
		int v = rank * 10;
		MPI_Send(&v, 1, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD);
	}
	report("MPI_ANY_SOURCE and MPI_ANY_TAG", ok);
}

static void check_probe(void)
{
	int ok = 1, to = (rank + 1) % size, from = (rank + size - 1) % size;
	int data[3] = { rank, rank + 1, rank + 2 }, in[3], count, flag = 0;
	MPI_Status st;
	MPI_Message msg;
	MPI_Request req;

	/* Probe: blocking, then receive what it announced. */
	MPI_Isend(data, 3, MPI_INT, to, 7, MPI_COMM_WORLD, &req);
	MPI_Probe(from, 7, MPI_COMM_WORLD, &st);
	MPI_Get_count(&st, MPI_INT, &count);
	ok &= count == 3 && st.MPI_SOURCE == from;
	MPI_Recv(in, 3, MPI_INT, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	ok &= in[0] == from && in[2] == from + 2;
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	report("MPI_Probe", ok);

	/* Iprobe: poll until the message is there. */
	ok = 1;
	MPI_Isend(data, 2, MPI_INT, to, 8, MPI_COMM_WORLD, &req);
	for (long spins = 0; !flag && spins < 100000000L; spins++)
		MPI_Iprobe(from, 8, MPI_COMM_WORLD, &flag, &st);
	ok &= flag;
	if (flag) {
		MPI_Get_count(&st, MPI_INT, &count);
		ok &= count == 2;
		MPI_Recv(in, 2, MPI_INT, from, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		ok &= in[1] == from + 1;
	}
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	report("MPI_Iprobe", ok);

	/* Mprobe/Mrecv: the matched message is reserved for us. */
	ok = 1;
	MPI_Isend(data, 3, MPI_INT, to, 9, MPI_COMM_WORLD, &req);
	MPI_Mprobe(from, 9, MPI_COMM_WORLD, &msg, &st);
	MPI_Get_count(&st, MPI_INT, &count);
	ok &= count == 3;
	MPI_Mrecv(in, 3, MPI_INT, &msg, MPI_STATUS_IGNORE);
	ok &= in[0] == from && in[1] == from + 1;
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	report("MPI_Mprobe and MPI_Mrecv", ok);
}

static void check_cancel(void)
{
	int buf, flag = 0, ok;
	MPI_Request req;
	MPI_Status st;

	/* Nobody sends with this tag: the posted receive must be cancellable. */
	MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &req);
	MPI_Cancel(&req);
	MPI_Wait(&req, &st);
	MPI_Test_cancelled(&st, &flag);
	ok = flag;
	report("MPI_Cancel of a posted receive", ok);
}

static void check_many_outstanding(void)
{
	enum { N = 10000 };
	int to = (rank + 1) % size, from = (rank + size - 1) % size, ok = 1;
	int *s = malloc(N * sizeof(int)), *r = malloc(N * sizeof(int));
	MPI_Request *req = malloc(2 * N * sizeof(MPI_Request));

	for (int i = 0; i < N; i++) {
		s[i] = rank * N + i;
		r[i] = -1;
	}
	for (int i = 0; i < N; i++)
		MPI_Irecv(&r[i], 1, MPI_INT, from, i % 32000, MPI_COMM_WORLD, &req[i]);
	for (int i = 0; i < N; i++)
		MPI_Isend(&s[i], 1, MPI_INT, to, i % 32000, MPI_COMM_WORLD, &req[N + i]);
	MPI_Waitall(2 * N, req, MPI_STATUSES_IGNORE);
	for (int i = 0; i < N; i++)
		if (r[i] != from * N + i)
			ok = 0;
	free(s);
	free(r);
	free(req);
	report("10000 outstanding non-blocking messages", ok);
}

static void check_collectives(void)
{
	int ok, v, sum, root_val, *all;
	double d;

	MPI_Barrier(MPI_COMM_WORLD);
	report("MPI_Barrier", 1);

	root_val = rank == 0 ? 12345 : -1;
	MPI_Bcast(&root_val, 1, MPI_INT, 0, MPI_COMM_WORLD);
	report("MPI_Bcast", root_val == 12345);

	v = rank + 1;
	sum = 0;
	MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	report("MPI_Reduce", rank != 0 || sum == size * (size + 1) / 2);

	d = rank + 0.5;
	double dsum = 0;
	MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	report("MPI_Allreduce", dsum == size * size / 2.0);

	all = malloc((size_t) size * sizeof(int));
	int *mine = malloc((size_t) size * sizeof(int));
	for (int i = 0; i < size; i++)
		mine[i] = rank * 100 + i;
	MPI_Alltoall(mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i < size; i++)
		ok &= all[i] == i * 100 + rank;
	report("MPI_Alltoall", ok);

	v = rank * 3;
	MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	ok = 1;
	for (int i = 0; i < size; i++)
		ok &= all[i] == i * 3;
	report("MPI_Allgather", ok);
	free(all);
	free(mine);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	check_p2p();
	check_any_source_tag();
	check_probe();
	check_cancel();
	check_many_outstanding();
	check_collectives();
	if (rank == 0)
		printf("mpi (%d ranks): %d passed, %d failed\n", size, passed, failed);
	MPI_Finalize();
	return failed ? 1 : 0;
}
