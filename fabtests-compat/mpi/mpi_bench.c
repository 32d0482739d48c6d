/*
 * MPI ping-pong latency and streaming bandwidth between ranks 0 and 1, for
 * bench/run.py (run through Open MPI's ofi MTL on either libfabric).
 *
 *   mpirun -np 2 ... mpi_bench [-S 1,64,1k,...] [-I iters] [-W window] [-O]
 *
 * -O measures one-sided communication instead (for Open MPI's osc rdma
 * over btl ofi): rank 0 puts to and gets from a window rank 1 created
 * with MPI_Win_create on its own heap memory (an MPI_Win_allocate window
 * may be served through shared memory on one node, bypassing libfabric),
 * in a passive-target epoch (MPI_Win_lock_all). Latency is one operation
 * and its MPI_Win_flush (the time until it is complete at the target);
 * bandwidth is a window (-W) of operations, then one flush.
 *
 * Output, one line per measurement, machine-readable:
 *   pingpong <bytes> <iters> <usec one-way> <MB/s>
 *   bw <bytes> <messages> <usec per message> <MB/s>
 *   put_lat|get_lat <bytes> <iters> <usec per op+flush> <MB/s>   (-O)
 *   put_bw|get_bw <bytes> <ops> <usec per op> <MB/s>            (-O)
 *   rss <rank> <peak KiB of this rank's own image (VmHWM)>
 * -I is the iteration count at small sizes; above 64 KiB it is scaled so a
 * size moves about 64 MiB (at least 10).
 *
 * SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
 */
#define _DEFAULT_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../benchmarks/sizes.h"

#define MAX_SIZES 64

/* Peak resident set of this process image, from /proc (not ru_maxrss,
 * which also counts the launcher's image before exec). */
static long vm_hwm_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static int iters_for(int base, size_t size)
{
	if (size <= 65536)
		return base;
	long n = (long) ((64u << 20) / size);
	if (n < 10)
		n = 10;
	return n < base ? (int) n : base;
}

/* One put to (or get from) the start of rank 1's window. */
static void one_op(int get, char *buf, int cnt, MPI_Win win)
{
	if (get)
		MPI_Get(buf, cnt, MPI_BYTE, 1, 0, cnt, MPI_BYTE, win);
	else
		MPI_Put(buf, cnt, MPI_BYTE, 1, 0, cnt, MPI_BYTE, win);
}

/* -O: put and get latency and bandwidth, rank 0 the origin. */
static void onesided(int rank, const size_t *sizes, int nsizes, int base, int window, size_t max)
{
	char *mem = calloc(1, max), *buf = calloc(1, max);
	MPI_Win win;
	if (!mem || !buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Win_create(mem, (MPI_Aint) max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	MPI_Win_lock_all(0, win);
	for (int get = 0; get < 2; get++) {
		for (int k = 0; k < nsizes; k++) {
			size_t sz = sizes[k];
			int n = iters_for(base, sz), cnt = (int) sz;
			int windows = (n + window - 1) / window;
			double t0 = 0, t = 0;
			MPI_Barrier(MPI_COMM_WORLD);
			if (rank == 0) {
				for (int i = -10; i < n; i++) {
					if (i == 0)
						t0 = MPI_Wtime();
					one_op(get, buf, cnt, win);
					MPI_Win_flush(1, win);
				}
				t = MPI_Wtime() - t0;
				printf("%s_lat %zu %d %.3f %.2f\n", get ? "get" : "put", sz, n, t * 1e6 / n,
				       (double) sz * n / t / 1e6);
				for (int i = -1; i < windows; i++) {
					if (i == 0)
						t0 = MPI_Wtime();
					for (int j = 0; j < window; j++)
						one_op(get, buf, cnt, win);
					MPI_Win_flush(1, win);
				}
				t = MPI_Wtime() - t0;
				long ops = (long) windows * window;
				printf("%s_bw %zu %ld %.3f %.2f\n", get ? "get" : "put", sz, ops, t * 1e6 / (double) ops,
				       (double) sz * ops / t / 1e6);
				fflush(stdout);
			}
		}
	}
	MPI_Win_unlock_all(win);
	MPI_Win_free(&win);
	free(mem);
	free(buf);
}

int main(int argc, char **argv)
{
	size_t sizes[MAX_SIZES] = { 1, 64, 1024, 8192, 65536, 1 << 20, 4 << 20 }, max = 1;
	int nsizes = 7, base = 1000, window = 64, rank, np, c, one_sided = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	while ((c = getopt(argc, argv, "S:I:W:O")) != -1) {
		if (c == 'S') {
			nsizes = parse_size_list(optarg, sizes, MAX_SIZES);
			if (nsizes < 0) {
				fprintf(stderr, "bad size list '%s'\n", optarg);
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
		} else if (c == 'I') {
			base = atoi(optarg);
		} else if (c == 'W') {
			window = atoi(optarg);
		} else if (c == 'O') {
			one_sided = 1;
		}
	}
	if (np != 2 || base < 1 || window < 1 || nsizes < 1) {
		if (rank == 0)
			fprintf(stderr, "mpi_bench: needs exactly 2 ranks, -I >= 1, -W >= 1\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int k = 0; k < nsizes; k++)
		if (sizes[k] > max)
			max = sizes[k];
	char *buf = calloc(1, max), ack = 0;
	MPI_Request *req = calloc((size_t) window, sizeof(*req));
	if (!buf || !req)
		MPI_Abort(MPI_COMM_WORLD, 1);
	int peer = 1 - rank;
	if (one_sided) {
		onesided(rank, sizes, nsizes, base, window, max);
		free(buf);
		free(req);
		MPI_Finalize();
		return 0;
	}

	for (int k = 0; k < nsizes; k++) {
		size_t sz = sizes[k];
		int n = iters_for(base, sz), cnt = (int) sz;
		double t0 = 0;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = -10; i < n; i++) {
			if (i == 0)
				t0 = MPI_Wtime();
			if (rank == 0) {
				MPI_Send(buf, cnt, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
				MPI_Recv(buf, cnt, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(buf, cnt, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, cnt, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			}
		}
		double t = MPI_Wtime() - t0;
		if (rank == 0) {
			printf("pingpong %zu %d %.3f %.2f\n", sz, n, t * 1e6 / (2.0 * n), 2.0 * (double) sz * n / t / 1e6);
			fflush(stdout);
		}
	}
	for (int k = 0; k < nsizes; k++) {
		size_t sz = sizes[k];
		int windows = (iters_for(base, sz) + window - 1) / window, cnt = (int) sz;
		double t0 = 0;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = -1; i < windows; i++) {
			if (i == 0)
				t0 = MPI_Wtime();
			for (int j = 0; j < window; j++) {
				if (rank == 0)
					MPI_Isend(buf, cnt, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &req[j]);
				else
					MPI_Irecv(buf, cnt, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &req[j]);
			}
			MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
			if (rank == 0)
				MPI_Recv(&ack, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			else
				MPI_Send(&ack, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
		}
		double t = MPI_Wtime() - t0;
		long msgs = (long) windows * window;
		if (rank == 0) {
			printf("bw %zu %ld %.3f %.2f\n", sz, msgs, t * 1e6 / (double) msgs, (double) sz * msgs / t / 1e6);
			fflush(stdout);
		}
	}
	long rss[2] = { vm_hwm_kib(), 0 };
	MPI_Gather(&rss[0], 1, MPI_LONG, rss, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("rss 0 %ld\nrss 1 %ld\n", rss[0], rss[1]);
	free(buf);
	free(req);
	MPI_Finalize();
	return 0;
}
